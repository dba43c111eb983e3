package cache

import (
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// retryWindow decides whether a watch that ended with an internal error
// (500) may be re-opened from the same resourceVersion: yes while the run of
// such errors is younger than max. A gap of quiet without one starts a new
// run. Time is an argument; the loop goroutine owns it.
type retryWindow struct {
	max, quiet  time.Duration
	first, last time.Time
}

// observe records how a watch ended at now.
func (w *retryWindow) observe(err error, now time.Time) {
	if !apierrors.IsInternalError(err) {
		return
	}
	if now.Sub(w.last) >= w.quiet {
		w.first = time.Time{}
	}
	if w.first.IsZero() {
		w.first = now
	}
	w.last = now
}

// allows reports whether another retry fits in the window at now. A run
// that has outlived the window is forgotten.
func (w *retryWindow) allows(now time.Time) bool {
	if w.max <= 0 {
		return false
	}
	if now.Sub(w.first) <= w.max {
		return true
	}
	w.first, w.last = time.Time{}, time.Time{}
	return false
}
