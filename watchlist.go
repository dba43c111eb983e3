package cache

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	c.watch = request(opts, modeGathering, r.clock.Now())
	start := c.watch.requested
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
		c.watch.open(w, realClock.Now())
		s := c.streamerFor(&c.watch)
		var complete bool
		r.watchListing.start()
		complete, err = s.run(ctx)
		r.watchListing.stop()
		if err == nil && complete {
			return c.watchListSynced(s.initial, start), false
		}
		c.watch.stop()
		if err == errStopRequested || err == errCycleEnded {
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
		if c.backoffThen(ctx, phaseWatchList, c.r.delayFor(o.retryAfter)) == phaseDone {
			return phaseDone, false
		}
		return phaseWatchList, true
	}
	return phaseList, false
}

// watchListSynced Replaces the store with the streamed state and keeps w
// open as the cycle's watch. If Replace fails the cycle falls back to LIST.
func (c *cycle) watchListSynced(initial *initialEvents, start time.Time) phase {
	rv := initial.resourceVersion
	c.r.pos.served()
	items := initial.take()
	if err := c.r.store.Replace(items, rv); err != nil {
		c.watch.stop()
		err = fmt.Errorf("unable to sync watch-list result: %w", err)
		c.apply(classify(atWatchListReplace, err, facts{}), rv, err)
		return phaseList
	}
	c.r.stats.reused(initial.reused, initial.notDecoded)
	c.synced(rv, len(items), start)
	// The WatchList's watch goes on as the cycle's: an open watch (see
	// liveness.opened), from now, in live mode.
	c.watch.mode, c.watch.requested = modeLive, c.r.clock.Now()
	c.watch.open(c.watch.w, realClock.Now())
	c.r.live.opened()
	return phaseStream
}

// watchListProgress tells any goroutine (WaitForSync) whether a WatchList
// is streaming the initial state and how many objects it has gathered:
// the count plus one while it streams, 0 otherwise. The loop goroutine
// writes it, once per burst of events.
type watchListProgress struct{ v atomic.Int64 }

func (p *watchListProgress) start()         { p.v.Store(1) }
func (p *watchListProgress) gathered(n int) { p.v.Store(int64(n) + 1) }
func (p *watchListProgress) stop()          { p.v.Store(0) }

// get returns the objects gathered so far and whether a WatchList streams.
func (p *watchListProgress) get() (int, bool) {
	v := p.v.Load()
	return int(v - 1), v > 0
}
