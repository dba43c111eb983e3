package cache

import (
	"context"
	"time"
)

// wake says why await returned: ch delivered, ctx ended, the cycle ended,
// or (0, 1, 2) that extra channel fired.
type wake int8

const (
	// wakeValue: ch delivered a value, or was closed.
	wakeValue wake = -1
	// wakeStop: ctx ended.
	wakeStop wake = -2
	// wakeEnded: a due resync failed; the failure has been carried out
	// (see cycle.resyncNow) and the cycle ends.
	wakeEnded wake = -3
)

// await is the one wait of the loop goroutine. It blocks until ch delivers
// (wakeValue, with the value and whether ch was open), one of extra fires
// (its index), or ctx ends (wakeStop). Meanwhile it services what is due
// whatever the loop waits for: liveness's timer (see liveness.fired) and,
// within a cycle c (nil between cycles), the resync timer; a resync that
// fails ends the wait (wakeEnded). Nil channels never fire; at most three
// extra channels are selected on.
func await[T any](ctx context.Context, live *liveness, c *cycle, ch <-chan T, extra ...<-chan time.Time) (T, bool, wake) {
	var x [3]<-chan time.Time
	copy(x[:], extra)
	var resync <-chan time.Time
	if c != nil {
		resync = c.resync.C()
	}
	for {
		select {
		case <-ctx.Done():
			var zero T
			return zero, false, wakeStop
		case <-live.C():
			live.fired(realClock.Now())
		case <-resync:
			if !c.resyncNow() {
				var zero T
				return zero, false, wakeEnded
			}
		case v, ok := <-ch:
			return v, ok, wakeValue
		case <-x[0]:
			var zero T
			return zero, false, 0
		case <-x[1]:
			var zero T
			return zero, false, 1
		case <-x[2]:
			var zero T
			return zero, false, 2
		}
	}
}

// never is a channel of no values for awaits that wait on extra only.
var never <-chan struct{}
