package cache

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// watchList runs phaseWatchList: one WATCH with SendInitialEvents streams
// the current state as ADDED events closed by the initial-events-end
// bookmark; the store is Replaced once with them and the same watch goes on
// as the cycle's watch. Throttling and refused connections back off and try
// again; an unavailable RV retries at RV ""; anything else falls back to LIST.
func (c *cycle) watchList(ctx context.Context) phase {
	for ctx.Err() == nil {
		if next, again := c.watchListOnce(ctx); !again {
			return next
		}
	}
	return phaseDone
}

// watchListOnce makes one WatchList attempt. It returns the next phase, or
// again when another attempt should follow.
func (c *cycle) watchListOnce(ctx context.Context) (next phase, again bool) {
	r := c.r
	r.stats.watchListed(r.listCause)
	opts := metav1.ListOptions{
		ResourceVersion:      r.pos.watchListRV(),
		AllowWatchBookmarks:  true,
		SendInitialEvents:    ptr.To(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		TimeoutSeconds:       r.watchTimeout(),
		ShardSelector:        c.selector(),
	}
	c.requested(opts)
	start := c.wStart
	w, err, ok := c.startWatch(ctx, opts)
	if !ok {
		return phaseDone, false
	}
	at := atWatchListOpen
	if err == nil {
		at = atWatchListStream
		r.stats.watchOpened()
		// No live.opened(): a WatchList shows it works by its events, and
		// one that stays silent after a loss is reported like any call.
		s := c.streamerFor(w, modeGathering)
		var complete bool
		if complete, err = s.run(ctx); err == nil && complete {
			return c.watchListSynced(w, s.initial, start), false
		}
		w.Stop()
		if err == errStopRequested {
			return phaseDone, false
		}
	}
	return c.afterWatchList(ctx, at, err)
}

// maxIncompleteWatchLists is how many WatchLists in a row one cycle lets
// the server close before their initial-events-end bookmark before it
// falls back to LIST. client-go tries again forever (kubernetes#140890), so
// such a server would never get a client-go Reflector synced.
const maxIncompleteWatchLists = 3

// afterWatchList carries out what a WatchList that failed at at with err
// (nil: closed before its initial-events-end bookmark) means, and follows
// its step: another attempt, at once or after a backoff delay, or a LIST.
func (c *cycle) afterWatchList(ctx context.Context, at where, err error) (next phase, again bool) {
	if at == atWatchListStream && err == nil {
		c.incomplete++
	}
	o := classify(at, err, facts{gaveUp: c.incomplete >= maxIncompleteWatchLists})
	c.apply(o, "", err)
	switch o.next {
	case stepRewatch:
		return phaseWatchList, true
	case stepBackoffRewatch:
		c.logger.V(2).Info("WatchList failed - backing off", "reflector", c.r.name, "type", c.r.typeDescription, "err", err)
		if c.backoffThen(ctx, phaseWatchList, c.r.backoffFor(o)) == phaseDone {
			return phaseDone, false
		}
		return phaseWatchList, true
	}
	if err == nil {
		c.logger.Info("WatchList keeps closing before its initial events end, falling back to a paginated LIST", "reflector", c.r.name, "type", c.r.typeDescription, "attempts", c.incomplete)
	} else {
		c.logger.V(4).Info("WatchList failed, falling back to a paginated LIST. Expected if the server does not support WatchList.", "reflector", c.r.name, "err", err)
	}
	return phaseList, false
}

// watchListSynced Replaces the store with the streamed state and keeps w
// open as the cycle's watch. If Replace fails the cycle falls back to LIST.
func (c *cycle) watchListSynced(w watch.Interface, initial *initialEvents, start time.Time) phase {
	rv := initial.resourceVersion
	c.r.pos.served()
	items := initial.take()
	if err := c.r.store.Replace(items, rv); err != nil {
		w.Stop()
		err = fmt.Errorf("unable to sync watch-list result: %w", err)
		c.logger.V(4).Info("WatchList failed, falling back to a paginated LIST.", "reflector", c.r.name, "err", err)
		c.apply(classify(atWatchListReplace, err, facts{}), rv, err)
		return phaseList
	}
	c.r.stats.reused(initial.reused)
	c.synced(rv, len(items), start)
	// The WatchList's watch goes on as the cycle's: an open watch (see
	// liveness.opened).
	c.r.live.opened(realClock.Now())
	c.w = w
	c.wMode = modeLive
	c.wStart = c.r.clock.Now()
	return phaseStream
}
