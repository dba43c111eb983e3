package cache

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// list runs phaseList: a LIST at the resume position (at the latest if
// the server cannot serve that one), then a Replace of the store.
func (c *cycle) list(ctx context.Context) phase {
	r := c.r
	start := r.clock.Now()
	opts := metav1.ListOptions{ResourceVersion: r.pos.listRV()}
	pageSize := r.pageSizeFor(opts.ResourceVersion)
	for {
		res, err, ok := c.listOnce(ctx, opts, pageSize, r.listCause)
		switch {
		case !ok:
			return phaseDone
		case err == nil:
			return c.listed(res, opts.ResourceVersion, start)
		}
		o := classify(atList, err, facts{listRV: opts.ResourceVersion})
		c.apply(o, opts.ResourceVersion, err)
		if o.next != stepListLatest {
			c.err = fmt.Errorf("failed to list %v: %w", r.typeDescription, err)
			return phaseDone
		}
		opts.ResourceVersion = r.pos.listRV()
	}
}

// listed Replaces the store with a LIST's result, listed at rv.
func (c *cycle) listed(res listed, rv string, start time.Time) phase {
	r := c.r
	r.server.listed(rv, res.paged)
	r.pos.served()
	if err := r.store.Replace(res.items, res.resourceVersion); err != nil {
		c.err = fmt.Errorf("unable to sync list result: %w", err)
		c.apply(classify(atListReplace, err, facts{}), rv, c.err)
		return phaseDone
	}
	c.synced(res.resourceVersion, len(res.items), start)
	return phaseWatch
}

// listOnce runs one paginated LIST in its own goroutine and counts it
// under cause; ok is false when ctx ended first.
func (c *cycle) listOnce(ctx context.Context, opts metav1.ListOptions, pageSize int64, cause ListCause) (listed, error, bool) {
	// The pager is built here: its retry policy draws its seed from the
	// Reflector's generator, which only the loop goroutine may use.
	p := pager{lister: c.r.lw, pageSize: pageSize, retry: c.r.newPageRetry()}
	call := startCall(func() (listed, error) { return p.list(ctx, opts) }, nil)
	for {
		select {
		case <-ctx.Done():
			call.giveUp()
			return listed{}, nil, false
		case <-c.r.live.C():
			c.r.graceEnded()
		case o := <-call.done:
			res, err := o.result()
			c.r.stats.listed(cause, res.pageRetries)
			return res, err, true
		}
	}
}

// pageSizeFor is the LIST page size for a list at rv: the user's choice,
// else the default when the server is known to page (no watch cache) or
// the list may be served from any cache (RV "" or "0"), else no paging so
// the watch cache can answer an exact-RV relist.
func (r *Reflector) pageSizeFor(rv string) int64 {
	switch {
	case r.WatchListPageSize != 0:
		return r.WatchListPageSize
	case r.server.pagedAtRV0, rv == "", rv == "0":
		return defaultPageSize
	default:
		return 0
	}
}
