package cache

import (
	"cmp"
	"time"
)

// where names the call a failure happened in.
type where uint8

const (
	// atList: a LIST failed (after its page retries).
	atList where = iota
	// atListPage: one page after the first of a paginated LIST failed.
	atListPage
	// atListReplace: the store's Replace failed after a LIST.
	atListReplace
	// atWatchListReplace: the store's Replace failed after a WatchList.
	atWatchListReplace
	// atWatchOpen: the WATCH request itself failed.
	atWatchOpen
	// atWatchStream: an open watch ended (nil error: the server closed it).
	atWatchStream
	// atWatchListOpen: the WatchList request itself failed.
	atWatchListOpen
	// atWatchListStream: an open WatchList ended before its
	// initial-events-end bookmark (nil error: the server closed it).
	atWatchListStream
	// atResync: the store's Resync failed while the cycle was watching.
	atResync
	// atQuietCheck: a check of a quiet watch's connection got no answer
	// (see quietCheck).
	atQuietCheck
	// atIndexer: what the store accepted could not be applied further on
	// (an informer's indexer failed on a change its queue held), and the
	// store's owner asked for a relist (see relistRequests).
	atIndexer
)

// step is what the cycle does after a failure.
type step uint8

const (
	// stepRewatch opens a new watch (or WatchList) at once.
	stepRewatch step = iota
	// stepBackoffRewatch waits a backoff delay (at least the Retry-After)
	// and then re-watches.
	stepBackoffRewatch
	// stepRelist ends the cycle without an error; the next one syncs again.
	stepRelist
	// stepListInstead gives up on WatchList for this cycle and LISTs.
	stepListInstead
	// stepListLatest LISTs again at once, at the latest resourceVersion.
	stepListLatest
	// stepRetryPage asks for the failed page again, from its continue
	// token, after a backoff delay (at least the Retry-After).
	stepRetryPage
	// stepListWhole LISTs everything at once, unpaginated, at the
	// resourceVersion of the first page (a continue token expired).
	stepListWhole
	// stepFail ends the cycle with the error; Run backs off (at least the
	// Retry-After) before the next cycle.
	stepFail
	// stepWatchOn keeps the open watch: it may still deliver.
	stepWatchOn
)

// healthEffect is what a failure does to Health (see Health's contract).
type healthEffect uint8

const (
	// healthNone: nothing is wrong with touch (the server ended the watch,
	// or answered in a way that the next step deals with at once); a loss
	// already begun runs on.
	healthNone healthEffect = iota
	// healthNow: a loss of touch that is reported at once: waiting cannot
	// mend it (a refusal), or it has already lasted long (a stall, a loop).
	healthNow
	// healthLoss: a loss of touch begins (or goes on) with the reason;
	// Degraded once it lasts the grace period.
	healthLoss
)

// streakEffect is what a failure does to the stale-RV streak.
type streakEffect uint8

const (
	// streakKeep: no watch ran to an end that says anything about its
	// resourceVersion (a throttled or refused request, a LIST, a store).
	streakKeep streakEffect = iota
	// streakReset: the watch ended in a way that says nothing against its
	// resourceVersion; the streak starts over.
	streakReset
	// streakCount: the watch ended on an unusable resourceVersion (or
	// closed at once); it counts toward the streak.
	streakCount
)

// facts are what classify needs to know beyond where and the error.
type facts struct {
	// listRV is the resourceVersion a failed LIST asked for.
	listRV string
	// internalRetry: internal errors are still being retried (see
	// Reflector.MaxInternalErrorRetryDuration).
	internalRetry bool
	// delivered: the watch delivered at least one event.
	delivered bool
	// pace: a watch that ends with an internal error before delivering
	// anything is re-watched after a backoff delay rather than at once
	// (see Reflector.paceInternalErrors).
	pace bool
	// empty: the watch closed within the grace period with nothing in it.
	empty bool
	// gaveUp: this cycle's WatchLists have been closed before their end
	// bookmark maxIncompleteWatchLists times.
	gaveUp bool
}

// logLine is what is logged about a failure: the message, at verbosity
// v; the zero logLine logs nothing.
type logLine struct {
	v   int8
	msg string
}

// The lines failures are logged with (see outcome.log).
var (
	logWatchBackoff    = logLine{4, "Watch failed - backing off"}
	logWatchNotOpened  = logLine{4, "Watch could not be opened"}
	logWatchExpired    = logLine{4, "Watch closed"}
	logWatchThrottled  = logLine{2, "Watch returned 429 - backing off"}
	logWatchStalled    = logLine{0, "Watch stalled, re-watching"}
	logWatchRetry500   = logLine{2, "Retrying watch after internal error"}
	logWatchEnded      = logLine{0, "Warning: watch ended with error"}
	logStaleLoop       = logLine{0, "Watches keep failing at the same resourceVersion; relisting with a consistent read"}
	logWatchListRetry  = logLine{2, "WatchList failed - backing off"}
	logWatchListGaveUp = logLine{0, "WatchList keeps closing before its initial events end, falling back to a paginated LIST"}
	logWatchListToList = logLine{4, "WatchList failed, falling back to a paginated LIST. Expected if the server does not support WatchList."}
	logReplaceToList   = logLine{4, "WatchList's Replace failed, falling back to a paginated LIST."}
	logQuietCheck      = logLine{0, "A quiet watch's connection did not answer a check"}
)

// outcome is everything one failure means. classify makes it; cycle.apply
// carries it out; the phases only follow next.
type outcome struct {
	next step
	// end labels the watch end in the stats; empty when no watch ended.
	end WatchEndCause
	// relist is the cause of the next sync (LIST or WatchList).
	relist ListCause
	health healthEffect
	reason DegradedReason
	streak streakEffect
	// reached: the server answered, so the backoff starts over.
	reached bool
	// forgetRV: the next sync is made at the latest resourceVersion.
	forgetRV bool
	// silent: the connection died without a word (see silentDeath); the
	// loss is dated from the watch's last sign of life.
	silent bool
	// refusedWatchList: the server refused WatchList for good (it does not
	// know the parameters); the Reflector remembers it (see
	// serverFacts.watchListRefused).
	refusedWatchList bool
	// log is what is logged.
	log logLine
	// retryAfter is the server's requested delay before the next attempt.
	retryAfter time.Duration
}

// breaksStaleLoop is o once the stale-RV streak it ended reached the
// threshold: relist with a consistent read, and say so at once.
func (o outcome) breaksStaleLoop() outcome {
	o.next, o.relist, o.forgetRV = stepRelist, ListStaleRVBreaker, true
	o.health, o.reason, o.log = healthNow, ReasonStaleRVLoop, logStaleLoop
	return o
}

// apply carries out o for a failure at rv (the resourceVersion the call
// asked for) with err (nil: a watch the server closed): the log line, the
// stats, the next sync's cause, the resume position, the stale-RV streak,
// the WatchList refusal memory, and touch with the server (health and the
// backoff, see liveness). It is the one place a failure changes them, and
// it decides nothing: o says what to do.
func (c *cycle) apply(o outcome, rv string, err error) {
	r := c.r
	if o.streak != streakKeep && r.observeWatchEnd(rv, o.streak == streakCount) {
		o = o.breaksStaleLoop()
	}
	c.log(o.log, rv, err)
	if o.end != "" {
		r.stats.watchEnded(o.end)
	}
	r.listCause = o.relist
	c.retryAfter = o.retryAfter
	if o.forgetRV {
		r.pos.markUnavailable()
	}
	if o.refusedWatchList {
		r.server.watchListRefused(r.clock.Now())
	}
	now := realClock.Now()
	switch o.health {
	case healthNow, healthLoss:
		r.live.failed(c.failure(o, err, now), now)
	default:
		r.live.closed(now)
	}
	if o.reached {
		r.live.reached()
	}
}

// failure is what o, a failure with err at now, tells liveness.
func (c *cycle) failure(o outcome, err error, now time.Time) failure {
	f := failure{reason: o.reason, err: cmp.Or(err, emptyErr(o)), cause: err, began: now, relist: o.next == stepRelist, now: o.health == healthNow}
	if last := c.watch.lastSign; o.silent && !last.IsZero() && last.Before(now) {
		f.began = last
	}
	return f
}

// log logs l (if anything) about a failure at rv with err.
func (c *cycle) log(l logLine, rv string, err error) {
	if l.msg == "" {
		return
	}
	kv := make([]any, 0, 8)
	kv = append(kv, "reflector", c.r.name, "type", c.r.typeDescription)
	if rv != "" {
		kv = append(kv, "resourceVersion", rv)
	}
	if err != nil {
		kv = append(kv, "err", err)
	}
	c.logger.V(int(l.v)).Info(l.msg, kv...)
}

// delayFor is the delay before acting on a failure whose server asked for
// retryAfter: the next backoff delay, or retryAfter if that is longer.
func (r *Reflector) delayFor(retryAfter time.Duration) time.Duration {
	return r.backoff.delay(r.clock.Now(), r.rand.Float64(), retryAfter)
}

// emptyErr is the LastError of a loss that no error caused: a watch closed
// with nothing in it, or a WatchList closed before its initial events end.
func emptyErr(o outcome) error {
	if o.reason == ReasonListFailing {
		return errWatchListIncomplete
	}
	return errEmptyWatches
}
