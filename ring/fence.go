package ring

import (
	"time"

	"k8s.io/utils/clock"
)

// fencer shuts the whole gate when the renew deadline passes without a
// newer one, whatever the loop is doing (stuck in a drain, a handler, or a
// call the network holds). It runs one goroutine, which stop joins.
type fencer struct {
	deadlines chan time.Time
	done      chan struct{}
}

// startFencer starts the goroutine; onFence runs on it at each deadline
// that passes.
func startFencer(clk clock.WithTicker, onFence func()) *fencer {
	f := &fencer{deadlines: make(chan time.Time, 1), done: make(chan struct{})}
	go f.run(clk, onFence)
	return f
}

// arm replaces the pending deadline with d.
func (f *fencer) arm(d time.Time) {
	select {
	case <-f.deadlines:
	default:
	}
	f.deadlines <- d
}

// stop ends the goroutine and waits for it.
func (f *fencer) stop() {
	close(f.deadlines)
	<-f.done
}

func (f *fencer) run(clk clock.WithTicker, onFence func()) {
	defer close(f.done)
	var timer clock.Timer
	var fire <-chan time.Time
	for {
		select {
		case d, ok := <-f.deadlines:
			if timer != nil {
				timer.Stop()
			}
			if !ok {
				return
			}
			timer = clk.NewTimer(d.Sub(clk.Now()))
			fire = timer.C()
		case <-fire:
			fire = nil
			onFence()
		}
	}
}
