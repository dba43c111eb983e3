package ring

import "sync"

// deliverer hands the adds (and kept deletes) of opened buckets to the
// handlers on a goroutine of its own, so that the ring's loop never waits
// for a handler: a slow handler must not delay renewing the Lease. Opened
// sets are delivered in order; a bucket closed meanwhile gets nothing
// more (the gate decides at each call). stop joins the goroutine.
type deliverer struct {
	reg  *registry
	mu   sync.Mutex
	todo []set
	wake chan struct{}
	quit chan struct{}
	done chan struct{}
}

func startDeliverer(reg *registry) *deliverer {
	d := &deliverer{reg: reg, wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go d.run()
	return d
}

// enqueue schedules the delivery for the buckets of s; on a nil
// deliverer (a ring that is not running) it delivers at once.
func (d *deliverer) enqueue(reg *registry, s set) {
	if d == nil {
		reg.acquired(s)
		return
	}
	d.mu.Lock()
	d.todo = append(d.todo, s.clone())
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
			d.reg.acquired(s)
		}
	}
}

// stop ends the goroutine once the delivery in progress returns.
func (d *deliverer) stop() {
	close(d.quit)
	<-d.done
}
