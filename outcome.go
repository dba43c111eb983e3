package cache

import (
	"cmp"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// where names the call a watch failure happened in.
type where uint8

const (
	// atWatchOpen: the WATCH request itself failed.
	atWatchOpen where = iota
	// atWatchStream: an open watch ended (nil error: the server closed it).
	atWatchStream
	// atWatchListOpen: the WatchList request itself failed.
	atWatchListOpen
	// atWatchListStream: an open WatchList ended before its
	// initial-events-end bookmark (nil error: the server closed it).
	atWatchListStream
)

// step is what the cycle does after a watch ended or failed to open.
type step uint8

const (
	// stepRewatch opens a new watch at once, from the resume position.
	stepRewatch step = iota
	// stepBackoffRewatch waits a backoff delay (at least the Retry-After)
	// and then re-watches.
	stepBackoffRewatch
	// stepRelist ends the cycle; the next one syncs again.
	stepRelist
	// stepListInstead gives up on WatchList for this cycle and LISTs.
	stepListInstead
)

// healthEffect is what a watch end does to Health (see Health's contract).
type healthEffect uint8

const (
	// healthNone: nothing is wrong with touch (the server ended the
	// watch); a loss already begun runs on.
	healthNone healthEffect = iota
	// healthNow: Degraded at once with the outcome's reason.
	healthNow
	// healthLoss: a loss of touch begins (or goes on) with the reason;
	// Degraded once it lasts the grace period.
	healthLoss
)

// streakEffect is what a watch end does to the stale-RV streak.
type streakEffect uint8

const (
	// streakReset: the watch ended in a way that says nothing against its
	// resourceVersion; the streak starts over.
	streakReset streakEffect = iota
	// streakCount: the watch ended on an unusable resourceVersion (or
	// closed at once); it counts toward the streak.
	streakCount
	// streakKeep: no watch ran (the request was throttled or refused).
	streakKeep
)

// watchFacts are what classifyWatch needs to know beyond the error.
type watchFacts struct {
	// internalRetry: internal errors are still being retried (see
	// Reflector.MaxInternalErrorRetryDuration).
	internalRetry bool
	// empty: the watch closed within the grace period with nothing in it.
	empty bool
	// gaveUp: this cycle's WatchLists have been closed before their end
	// bookmark maxIncompleteWatchLists times.
	gaveUp bool
}

// outcome is everything one watch end means. classifyWatch makes it;
// cycle.apply carries it out; the phases only follow next.
type outcome struct {
	next step
	// end labels the watch end in the stats.
	end WatchEndCause
	// relist is the cause of the sync that follows if next is stepRelist.
	relist ListCause
	health healthEffect
	reason DegradedReason
	streak streakEffect
	// reached: the server answered, so the backoff starts over.
	reached bool
	// stalls: the watch went silent; the cycle is Stalled until data flows.
	stalls bool
	// endsStall: a clean close ends a Stalled state.
	endsStall bool
	// forgetRV: the next attempt is made at the latest resourceVersion.
	forgetRV bool
	// retryAfter is the server's requested delay before the next attempt.
	retryAfter time.Duration
}

// classifyWatch decides, in one place, what a watch that ended (or failed
// to open) at w with err means. cycle_test.go lists every case.
func classifyWatch(w where, err error, f watchFacts) outcome {
	o := outcome{end: watchEndCause(err), reached: isRVUnavailable(err)}
	if staleRVFailure(err) {
		o.streak = streakCount
	}
	o.relist = relistCause(o.end)
	if secs, ok := apierrors.SuggestsClientDelay(err); ok && apierrors.IsTooManyRequests(err) {
		o.retryAfter = time.Duration(secs) * time.Second
	}
	switch w {
	case atWatchOpen:
		return openOutcome(o, err)
	case atWatchStream:
		return streamOutcome(o, err, f)
	}
	return watchListOutcome(o, w, err, f)
}

// watchListOutcome completes o for a WatchList that failed to open (w is
// atWatchListOpen) or ended before its initial events did. Throttling and
// refused connections back off and try again, as does a stream closed
// early until the cycle gives up on those; an unavailable RV tries again
// at once from the latest; anything else LISTs instead. The stale-RV
// streak is for watches only.
func watchListOutcome(o outcome, w where, err error, f watchFacts) outcome {
	o.streak, o.relist = streakKeep, ListRetry
	switch {
	case err == nil && f.gaveUp:
		o.next, o.relist = stepListInstead, ListWatchListFallback
		o.health, o.reason = healthLoss, ReasonListFailing
	case err == nil:
		o.next, o.health, o.reason = stepBackoffRewatch, healthLoss, ReasonListFailing
	case isWatchOpenRetriable(err):
		o.next, o.health, o.reason = stepBackoffRewatch, healthNow, classify(err, ReasonThrottled)
	case isRVUnavailable(err):
		o.next, o.relist, o.forgetRV = stepRewatch, relistCause(o.end), true
	default:
		o.next, o.relist = stepListInstead, ListWatchListFallback
		if w == atWatchListStream {
			o.health, o.reason = healthLoss, classify(err, ReasonListFailing)
		}
	}
	return o
}

// openOutcome completes o for a WATCH request that failed: throttling and
// refused connections back off and try again; anything else relists.
// Either is reported at once: the server (or its absence) answered.
func openOutcome(o outcome, err error) outcome {
	o.health = healthNow
	if isWatchOpenRetriable(err) {
		o.next, o.reason, o.streak = stepBackoffRewatch, classify(err, ReasonThrottled), streakKeep
		return o
	}
	o.next, o.reason = stepRelist, classify(err, ReasonWatchFailing)
	return o
}

// streamOutcome completes o for an open watch that ended with err.
func streamOutcome(o outcome, err error, f watchFacts) outcome {
	var short *VeryShortWatchError
	switch {
	case err == nil:
		o.next, o.endsStall = stepRewatch, true
		if f.empty {
			o.health, o.reason = healthLoss, ReasonWatchFailing
		}
	case isRVUnavailable(err):
		// The server answered, but the watch is lost until the relist
		// completes: a relist that blocks is reported after the grace.
		o.next, o.health, o.reason = stepRelist, healthLoss, ReasonWatchFailing
	case apierrors.IsTooManyRequests(err):
		o.next, o.health, o.reason = stepBackoffRewatch, healthNow, ReasonThrottled
	case errors.Is(err, ErrWatchStalled):
		o.next, o.health, o.reason, o.stalls = stepRewatch, healthNow, ReasonStalled, true
	case errors.As(err, &short):
		o.next, o.health, o.reason = stepRelist, healthLoss, ReasonWatchFailing
	case apierrors.IsInternalError(err) && f.internalRetry:
		o.next, o.health, o.reason = stepRewatch, healthLoss, ReasonWatchFailing
	default:
		o.next, o.health, o.reason = stepRelist, healthLoss, classify(err, ReasonWatchFailing)
	}
	return o
}

// apply carries out o for a watch that started at rv and ended with err
// (nil: closed by the server): the stats, the next sync's cause, the
// backoff, the stale-RV streak and Health. It is the one place a watch end
// changes them.
func (c *cycle) apply(o outcome, rv string, err error) {
	r := c.r
	r.stats.watchEnded(o.end)
	r.listCause = o.relist
	if o.reached {
		r.reachedServer()
	}
	if o.forgetRV {
		r.pos.markUnavailable()
	}
	if o.next == stepListInstead {
		r.rememberWatchListRefusal(err, r.clock.Now())
	}
	if o.streak != streakKeep && r.observeWatchEnd(rv, o.streak == streakCount) {
		c.breakStaleLoop(rv, err)
	}
	switch {
	case o.stalls:
		c.stalled = true
	case o.endsStall:
		c.endStall()
	}
	switch o.health {
	case healthNow:
		r.health.set(Degraded, o.reason, err, r.clock.Now())
	case healthLoss:
		err = cmp.Or(err, emptyErr(o))
		r.lostTouch(o.reason, err)
	default:
		r.watchClosed()
	}
}

// backoffFor is the delay before acting on o: the next backoff delay, or
// the server's Retry-After if that is longer.
func (r *Reflector) backoffFor(o outcome) time.Duration {
	return max(r.nextBackoff(), o.retryAfter)
}

// emptyErr is the LastError of a loss that no error caused: a watch closed
// with nothing in it, or a WatchList closed before its initial events end.
func emptyErr(o outcome) error {
	if o.reason == ReasonListFailing {
		return errWatchListIncomplete
	}
	return errEmptyWatches
}
