package cache

import (
	"errors"
	"net"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// classify decides, in one place, what a failure at w with err means:
// the next step, the stats labels, the effect on Health, the stale-RV
// streak and the backoff. cycle_test.go lists every case; it is the
// answer to "what happens after X?".
func classify(w where, err error, f facts) outcome {
	switch w {
	case atList:
		return listOutcome(err, f)
	case atListPage:
		return pageOutcome(err)
	case atListReplace, atWatchListReplace:
		return replaceOutcome(w)
	case atQuietCheck:
		return quietOutcome()
	case atIndexer:
		// As a refused watch event: the cycle has ended; relist.
		return storeOutcome(outcome{})
	}
	o := outcome{end: watchEndCause(err), reached: isRVUnavailable(err), streak: streakReset}
	o.relist = relistCause(o.end)
	o.retryAfter = retryAfter(err)
	o.silent = w == atWatchStream && silentDeath(err)
	switch w {
	case atWatchOpen:
		return openOutcome(o, err)
	case atWatchStream:
		return streamOutcome(o, err, f)
	case atResync:
		return resyncOutcome(o)
	}
	return watchListOutcome(o, w, err, f)
}

// failing sets o's health effect and reason for err, a failure the
// Reflector retries: reported at once when waiting cannot mend it (the
// request is forbidden, malformed, or the resource not served; the server
// ignored the shard selector), else a loss of touch, reported if it lasts
// the grace period.
func failing(o outcome, err error, fallback DegradedReason) outcome {
	o.reason = reasonFor(err, fallback)
	o.health = healthLoss
	switch o.reason {
	case ReasonForbidden, ReasonNotFound, ReasonRejected, ReasonShardIgnored:
		o.health = healthNow
	}
	return o
}

// listOutcome: a LIST at an unusable resourceVersion is repeated at once
// at the latest; any other failure ends the cycle, and Run backs off.
func listOutcome(err error, f facts) outcome {
	if f.listRV != "" && (isRVUnavailable(err) || rvRejected(f.listRV, err)) {
		// Compacted away, not reached yet, or not one the server
		// understands: read the latest.
		return outcome{next: stepListLatest, relist: unavailableCause(err), reached: true, forgetRV: true}
	}
	o := outcome{next: stepFail, relist: ListRetry, retryAfter: retryAfter(err)}
	return failing(o, err, ReasonListFailing)
}

// pageOutcome: a page that failed in a transient way is asked for again;
// after an expired continue token everything is LISTed at once; the LIST
// fails on any other error. The LIST's own outcome, if it fails, is
// decided at atList; a page has no other effect.
func pageOutcome(err error) outcome {
	switch {
	case apierrors.IsResourceExpired(err):
		return outcome{next: stepListWhole}
	case isTransientListError(err):
		return outcome{next: stepRetryPage, retryAfter: retryAfter(err)}
	}
	return outcome{next: stepFail}
}

// replaceOutcome: the store refused the synced state. After a LIST the
// cycle ends with the error; after a WatchList the cycle LISTs instead.
func replaceOutcome(w where) outcome {
	o := outcome{next: stepFail, relist: ListRetry, health: healthLoss, reason: ReasonListFailing}
	if w == atWatchListReplace {
		o.next, o.log = stepListInstead, logReplaceToList
	}
	return o
}

// resyncOutcome completes o for a store Resync that failed: the cycle
// ends, and the next one relists.
func resyncOutcome(o outcome) outcome {
	// A store failure says nothing about the resourceVersion.
	o.next, o.streak = stepRelist, streakKeep
	o.health, o.reason, o.log = healthLoss, ReasonWatchFailing, logWatchEnded
	return o
}

// quietOutcome: a quiet watch's connection did not answer a check. It
// died without a word, like one the HTTP/2 health check gives up on: the
// loss began at the watch's last sign of life. The watch stays open.
func quietOutcome() outcome {
	return outcome{next: stepWatchOn, relist: ListWatchError, health: healthLoss, reason: ReasonWatchFailing, silent: true, log: logQuietCheck}
}

// quietCheckAnswered: the server answered a quiet check, if only with an
// error status: the connection works.
func quietCheckAnswered(err error) bool {
	var status apierrors.APIStatus
	return err == nil || errors.As(err, &status)
}

// openOutcome completes o for a WATCH request that failed: throttling and
// refused connections back off and try again; anything else relists.
func openOutcome(o outcome, err error) outcome {
	if isWatchOpenRetriable(err) {
		o.next, o.streak, o.log = stepBackoffRewatch, streakKeep, logWatchBackoff
		return failing(o, err, ReasonThrottled)
	}
	o.next, o.log = stepRelist, logWatchNotOpened
	if isRVUnavailable(err) {
		o.streak = streakCount
	}
	return failing(o, err, ReasonWatchFailing)
}

// streamOutcome completes o for an open watch that ended with err. A
// watch that ended on an unusable resourceVersion, or closed at once (as
// when the server keeps telling the client its RV is too old), counts
// toward the stale-RV streak.
func streamOutcome(o outcome, err error, f facts) outcome {
	var short *VeryShortWatchError
	switch {
	case errors.Is(err, ErrStoreRefused):
		return storeOutcome(o)
	case err == nil:
		o.next = stepRewatch
		if f.empty {
			o.health, o.reason = healthLoss, ReasonWatchFailing
		}
		return o
	case errors.Is(err, ErrWatchStalled):
		// Silent for the stall window: the loss is already that old.
		o.next, o.health, o.reason, o.log = stepRewatch, healthNow, ReasonStalled, logWatchStalled
		return o
	case isRVUnavailable(err), errors.As(err, &short):
		// The watch is lost until the relist completes: a relist that
		// blocks is reported after the grace period.
		o.next, o.streak, o.log = stepRelist, streakCount, logWatchEnded
		if o.end == WatchExpired {
			o.log = logWatchExpired
		}
	case apierrors.IsTooManyRequests(err):
		o.next, o.log = stepBackoffRewatch, logWatchThrottled
	case apierrors.IsInternalError(err) && f.internalRetry:
		// client-go re-watches at once; with the Reflector's own backoff
		// and clock, a watch that failed before it delivered anything
		// waits first, so a server that fails every watch is not asked
		// again in a tight loop.
		o.next, o.log = stepRewatch, logWatchRetry500
		if !f.delivered && f.pace {
			o.next, o.log = stepBackoffRewatch, logWatchEnded
		}
	default:
		o.next, o.log = stepRelist, logWatchEnded
	}
	return failing(o, err, ReasonWatchFailing)
}

// watchListOutcome completes o for a WatchList that failed to open (w is
// atWatchListOpen) or ended before its initial events did. Throttling and
// refused connections back off and try again, as does a stream closed
// early until the cycle gives up on those; an unavailable RV tries again
// at once from the latest; anything else LISTs instead. The stale-RV
// streak is for watches only.
func watchListOutcome(o outcome, w where, err error, f facts) outcome {
	o.streak, o.relist = streakKeep, ListRetry
	switch {
	case err == nil && f.gaveUp:
		o.next, o.relist, o.log = stepListInstead, ListWatchListFallback, logWatchListGaveUp
		o.health, o.reason = healthLoss, ReasonListFailing
	case err == nil:
		o.next, o.health, o.reason, o.log = stepBackoffRewatch, healthLoss, ReasonListFailing, logWatchListRetry
	case isWatchOpenRetriable(err):
		o.next, o.log = stepBackoffRewatch, logWatchListRetry
		o = failing(o, err, ReasonThrottled)
	case isRVUnavailable(err):
		o.next, o.relist, o.forgetRV = stepRewatch, relistCause(o.end), true
	default:
		o.next, o.relist, o.log = stepListInstead, ListWatchListFallback, logWatchListToList
		o.refusedWatchList = definitiveWatchListRefusal(err)
		if w == atWatchListStream {
			o = failing(o, err, ReasonListFailing)
		}
	}
	return o
}

// definitiveWatchListRefusal: the server answered a WatchList request in a
// way that will not change on a retry (it does not know the parameters).
func definitiveWatchListRefusal(err error) bool {
	return apierrors.IsBadRequest(err) || apierrors.IsInvalid(err) || apierrors.IsMethodNotSupported(err) ||
		apierrors.IsNotAcceptable(err) || apierrors.ReasonForError(err) == "NotImplemented"
}

// retryAfter is the delay a 429 err asks for with Retry-After; zero for
// other errors.
func retryAfter(err error) time.Duration {
	if secs, ok := apierrors.SuggestsClientDelay(err); ok && apierrors.IsTooManyRequests(err) {
		return time.Duration(secs) * time.Second
	}
	return 0
}

// reasonFor is the DegradedReason err gives, or fallback when err says
// nothing more specific.
func reasonFor(err error, fallback DegradedReason) DegradedReason {
	switch {
	case IsShardIgnored(err):
		return ReasonShardIgnored
	case apierrors.IsBadRequest(err), isInvalidShardSelector(err):
		return ReasonRejected
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return ReasonForbidden
	case apierrors.IsNotFound(err):
		return ReasonNotFound
	case apierrors.IsTooManyRequests(err):
		return ReasonThrottled
	case utilnet.IsConnectionRefused(err):
		return ReasonUnreachable
	}
	return fallback
}

// isInvalidShardSelector: kube-apiserver 1.37 answers a shard selector it
// cannot parse with a 500 whose message says so, rather than a 400.
func isInvalidShardSelector(err error) bool {
	return apierrors.IsInternalError(err) && strings.Contains(err.Error(), "invalid shard selector")
}

// silentDeath: the watch's connection died without the server saying so:
// the HTTP/2 health check gave up on it ("client connection lost", its
// ping timed out) or a read timed out. Nothing came since the watch's last
// event, bookmark or open, so the loss of touch began then.
func silentDeath(err error) bool {
	if err == nil {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "client connection lost") || strings.Contains(msg, "http2: ping")
}
