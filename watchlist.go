package cache

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	cause := r.takeListCause()
	r.stats.watchListed(cause)
	opts := metav1.ListOptions{
		ResourceVersion:      r.pos.watchListRV(),
		AllowWatchBookmarks:  true,
		SendInitialEvents:    ptr.To(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		TimeoutSeconds:       r.watchTimeout(),
	}
	c.requested(opts)
	start := c.wStart
	w, err, ok := c.startWatch(ctx, opts)
	if !ok {
		return phaseDone, false
	}
	if err == nil {
		r.stats.watchOpened()
		r.live.opened()
		s := newStreamer(c, w, true)
		var complete bool
		if complete, err = s.run(ctx); err == nil && complete {
			return c.watchListSynced(w, s.initial, start), false
		}
		w.Stop()
		if err == errStopRequested {
			return phaseDone, false
		}
		c.watchListGone(err)
	}
	r.watchEnded(err)
	if err == nil {
		return c.watchListIncomplete(ctx)
	}
	if c.watchListRetry(ctx, err) {
		return phaseWatchList, true
	}
	r.rememberWatchListRefusal(err, r.clock.Now())
	r.listCause = ListWatchListFallback
	c.logger.V(4).Info("WatchList failed, falling back to a paginated LIST. Expected if the server does not support WatchList.", "reflector", r.name, "err", err)
	return phaseList, false
}

// maxIncompleteWatchLists is how many WatchLists in a row one cycle lets
// the server close before their initial-events-end bookmark before it
// falls back to LIST. client-go tries again forever (kubernetes#140890), so
// such a server would never get a client-go Reflector synced.
const maxIncompleteWatchLists = 3

// watchListIncomplete decides what follows a WatchList the server closed
// before its initial-events-end bookmark: another attempt after a backoff
// delay, or, once maxIncompleteWatchLists of them have been closed in this
// cycle, a LIST (counted as a watch_list_fallback). Health learns of each
// from watchListGone.
func (c *cycle) watchListIncomplete(ctx context.Context) (next phase, again bool) {
	c.incomplete++
	if c.incomplete >= maxIncompleteWatchLists {
		c.r.listCause = ListWatchListFallback
		c.logger.Info("WatchList keeps closing before its initial events end, falling back to a paginated LIST", "reflector", c.r.name, "type", c.r.typeDescription, "attempts", c.incomplete)
		return phaseList, false
	}
	c.r.listCause = ListRetry
	if c.backoffThen(ctx, phaseWatchList, c.r.nextBackoff()) == phaseDone {
		return phaseDone, false
	}
	return phaseWatchList, true
}

// watchListRetry decides whether a failed WatchList is tried again, and
// does what must happen before that (a backoff wait, or forgetting the RV).
func (c *cycle) watchListRetry(ctx context.Context, err error) bool {
	switch {
	case isWatchOpenRetriable(err):
		c.logger.V(2).Info("WatchList failed - backing off", "reflector", c.r.name, "type", c.r.typeDescription, "err", err)
		c.r.health.failed(err, ReasonThrottled, c.r.clock.Now())
		c.r.listCause = ListRetry
		return c.backoffThen(ctx, phaseWatchList, c.r.delayAfter(err)) != phaseDone
	case isRVUnavailable(err):
		c.r.pos.markUnavailable()
		return true
	default:
		return false
	}
}

// watchListSynced Replaces the store with the streamed state and keeps w
// open as the cycle's watch. If Replace fails the cycle falls back to LIST.
func (c *cycle) watchListSynced(w watch.Interface, initial *initialEvents, start time.Time) phase {
	rv := initial.resourceVersion
	c.r.pos.unavailable = false
	items := initial.take()
	if err := c.r.store.Replace(items, rv); err != nil {
		w.Stop()
		c.logger.V(4).Info("WatchList failed, falling back to a paginated LIST.", "reflector", c.r.name, "err", fmt.Errorf("unable to sync watch-list result: %w", err))
		c.r.listCause = ListRetry
		return phaseList
	}
	c.synced(rv, len(items), start)
	c.w = w
	c.fromSynthetic = false
	c.wStart = c.r.clock.Now()
	return phaseStream
}

// watchListGone tells liveness how an open WatchList ended before its
// initial-events-end bookmark: closed (nil) or failed (err). A 429 is
// reported at once elsewhere and a 410 is the server answering.
func (c *cycle) watchListGone(err error) {
	switch {
	case err == nil:
		c.r.lostTouch(ReasonListFailing, errWatchListIncomplete)
	case isRVUnavailable(err), apierrors.IsTooManyRequests(err):
		c.r.watchClosed()
	default:
		c.r.lostTouch(classify(err, ReasonListFailing), err)
	}
}
