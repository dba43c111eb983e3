package cache

import (
	"fmt"
	"time"

	"k8s.io/utils/clock"
)

// resyncTimer calls the store's Resync every period while a cycle watches.
// It belongs to one cycle and to the loop goroutine; its channel is selected
// on wherever the cycle waits (watching, opening a watch, backing off).
type resyncTimer struct {
	period time.Duration
	timer  clock.Timer
}

// startResync returns a running resync timer, or nil (whose C is a nil
// channel that never fires) when period is not positive.
func startResync(c clock.Clock, period time.Duration) *resyncTimer {
	if period <= 0 {
		return nil
	}
	return &resyncTimer{period: period, timer: c.NewTimer(period)}
}

// C fires when a resync is due.
func (t *resyncTimer) C() <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.timer.C()
}

// fire runs one due resync: store.Resync unless shouldResync says no, then
// arms the timer for the next period. A Resync error is returned wrapped in
// errStoreResync, and the timer is not re-armed.
func (t *resyncTimer) fire(store ReflectorStore, shouldResync func() bool) error {
	if shouldResync == nil || shouldResync() {
		if err := store.Resync(); err != nil {
			return fmt.Errorf("%w: %w", errStoreResync, err)
		}
	}
	t.timer.Reset(t.period)
	return nil
}

func (t *resyncTimer) stop() {
	if t != nil {
		t.timer.Stop()
	}
}
