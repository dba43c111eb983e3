package ring

import (
	"context"
	"sync"
)

// deliverer hands openings to the informers on a goroutine of its own, so
// that the ring's loop never waits on a store or the API server for them:
// nothing must delay renewing the Lease. Openings are handed over in
// order; each handler then gets the opening's adds (and kept deletes) from
// its own goroutine, and a bucket closed meanwhile gets nothing more (the
// gate decides at each call). stop joins the goroutine.
type deliverer struct {
	reg *registry
	// ctx ends when stop is called: it bounds the replays.
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	todo   []*opening
	wake   chan struct{}
	quit   chan struct{}
	done   chan struct{}
}

func startDeliverer(reg *registry) *deliverer {
	d := &deliverer{reg: reg, wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	go d.run()
	return d
}

// enqueue schedules the delivery of opening o; on a nil deliverer (a
// ring that is not running) it delivers at once.
func (d *deliverer) enqueue(reg *registry, o *opening) {
	if d == nil {
		reg.acquired(context.Background(), o)
		return
	}
	d.mu.Lock()
	d.todo = append(d.todo, o)
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *deliverer) run() {
	defer close(d.done)
	for {
		select {
		case <-d.quit:
			return
		case <-d.wake:
		}
		for {
			d.mu.Lock()
			if len(d.todo) == 0 {
				d.mu.Unlock()
				break
			}
			s := d.todo[0]
			d.todo = d.todo[1:]
			d.mu.Unlock()
			d.reg.acquired(d.ctx, s)
		}
	}
}

// stop ends the goroutine once the delivery in progress returns.
func (d *deliverer) stop() {
	d.cancel()
	close(d.quit)
	<-d.done
}
