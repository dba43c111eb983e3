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
	rv := r.pos.listRV()
	pageSize := r.pageSizeFor(rv)
	for {
		res, err, ok := c.listOnce(ctx, rv, pageSize, r.listCause)
		switch {
		case !ok:
			return phaseDone
		case err == nil:
			return c.listed(res, rv, start)
		}
		o := classify(atList, err, facts{listRV: rv})
		c.apply(o, rv, err)
		if o.next != stepListLatest {
			c.err = fmt.Errorf("failed to list %v: %w", r.typeDescription, err)
			return phaseDone
		}
		rv = r.pos.listRV()
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

// listCall is one paginated LIST handed to its own goroutine, which owns
// it from then on: the options and the pager (with its retry state) are
// not kept on the loop goroutine's stack.
type listCall struct {
	p    pager
	opts metav1.ListOptions
}

// listOnce runs one LIST of the cycle's shard at rv, in pages of
// pageSize (0: unpaged), in its own goroutine and counts it under cause;
// ok is false when ctx ended first.
func (c *cycle) listOnce(ctx context.Context, rv string, pageSize int64, cause ListCause) (listed, error, bool) {
	return c.listShard(ctx, rv, pageSize, cause, c.shard, c.r.in.reusing())
}

// listShard is listOnce for shard spec (nil: unsharded), looking for held
// objects to reuse if reuse is set.
func (c *cycle) listShard(ctx context.Context, rv string, pageSize int64, cause ListCause, spec *shardSpec, reuse bool) (listed, error, bool) {
	// The pager is built here: its retry policy draws its seed from the
	// Reflector's generator, which only the loop goroutine may use.
	lc := &listCall{
		p:    pager{lister: c.r.lw, pageSize: pageSize, retry: c.r.newPageRetry(), shard: spec.newCheck(), in: c.r.in, reuse: reuse},
		opts: metav1.ListOptions{ResourceVersion: rv, ShardSelector: spec.selectorOrNone()},
	}
	call := startCall(func() (listed, error) { return lc.p.list(ctx, &lc.opts) }, nil)
	o, _, why := await(ctx, &c.r.live, c, call.done)
	if why != wakeValue {
		call.giveUp()
		return listed{}, nil, false
	}
	res, err := o.result()
	c.r.stats.listed(cause, res.pageRetries, res.pagesUnused)
	c.r.stats.shardDropped(res.shardDropped)
	c.r.stats.shardIgnoredBy(res)
	c.r.stats.reused(res.reused, res.notDecoded)
	return res, err, true
}
