package cache

import (
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// defaultStaleRVThreshold is how many watches in a row may end on an
// unusable resourceVersion (expired, too large, or closed at once) at the
// same RV before the Reflector stops trusting that RV and relists with a
// consistent read (RV "").
const defaultStaleRVThreshold = 3

// staleStreak counts consecutive watches that failed at one resourceVersion.
// The loop goroutine owns it.
type staleStreak struct {
	rv    string
	count int
}

// staleRVFailure says whether err ended a watch because the server could
// not serve its resourceVersion, or closed it at once (as when the server
// keeps telling the client its RV is too old).
func staleRVFailure(err error) bool {
	var short *VeryShortWatchError
	return isRVUnavailable(err) || errors.As(err, &short)
}

// observeWatchEnd records whether a watch that started at rv ended on an
// unusable resourceVersion (stale, see staleRVFailure) and reports whether
// the streak just reached the threshold: the caller then relists at RV "".
func (r *Reflector) observeWatchEnd(rv string, stale bool) bool {
	if r.staleThreshold <= 0 || !stale {
		r.stale = staleStreak{}
		return false
	}
	if r.stale.rv != rv {
		r.stale = staleStreak{rv: rv}
	}
	r.stale.count++
	if r.stale.count < r.staleThreshold {
		return false
	}
	r.stale = staleStreak{}
	return true
}

// breakStaleLoop makes the next list a consistent read and says why.
func (c *cycle) breakStaleLoop(rv string, err error) {
	c.r.pos.markUnavailable()
	c.r.listCause = ListStaleRVBreaker
	c.logger.Info("Watches keep failing at the same resourceVersion; relisting with a consistent read", "reflector", c.r.name, "resourceVersion", rv, "err", err)
	c.r.health.set(Degraded, ReasonStaleRVLoop, err, c.r.clock.Now())
}

// definitiveWatchListRefusal: the server answered a WatchList request in a
// way that will not change on a retry (it does not know the parameters).
func definitiveWatchListRefusal(err error) bool {
	return apierrors.IsBadRequest(err) || apierrors.IsInvalid(err) || apierrors.IsMethodNotSupported(err) ||
		apierrors.IsNotAcceptable(err) || apierrors.ReasonForError(err) == "NotImplemented"
}

// rememberWatchListRefusal stops asking for WatchList for the configured
// time (forever by default) after a definitive refusal.
func (r *Reflector) rememberWatchListRefusal(err error, now time.Time) {
	if r.watchListMemory < 0 || !definitiveWatchListRefusal(err) {
		return
	}
	if r.watchListMemory == 0 {
		r.useWatchList = false
		return
	}
	r.watchListOffUntil = now.Add(r.watchListMemory)
}

// wantsWatchList says whether the next cycle starts with WatchList.
func (r *Reflector) wantsWatchList(now time.Time) bool {
	return r.useWatchList && !now.Before(r.watchListOffUntil)
}

// delayAfter is the backoff delay before retrying after err, stretched to
// the server's Retry-After when a 429 carries one.
func (r *Reflector) delayAfter(err error) time.Duration {
	return stretchToRetryAfter(r.nextBackoff(), err)
}
