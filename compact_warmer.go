package cache

import "sync"

// warmer decodes a compact informer's handoffs ahead of its listeners, on
// a goroutine of its own, in the order they were distributed, so that a
// burst of notifications (the initial list's adds, a relist, a watch
// that floods) is decoded on another core while the handlers take what
// is already decoded. It holds what it decodes in the handoffs, within
// half their budget (the other half is the listeners'): when that is
// spent it waits for the listeners to give some back (or for stop), so it
// never runs further ahead than the budget allows and never decodes for
// nothing. A listener that reaches a
// handoff first decodes it itself, as without a warmer.
//
// run is the warmer's goroutine, GOMAXPROCS of them, each taking the
// next handoff: started by its processor's start and joined by its stop.
type warmer struct {
	budget *handoffBudget
	// done is closed by stop.
	done chan struct{}

	mu      sync.Mutex // guards what follows
	queue   []*handoff
	head    int
	stopped bool
	// wake holds a signal when the queue may have grown or the warmer
	// was stopped.
	wake chan struct{}
}

// newWarmer returns a warmer of the handoffs charged to budget.
func newWarmer(budget *handoffBudget) *warmer {
	return &warmer{budget: budget, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// add queues n's handoffs that hold nothing yet.
func (w *warmer) add(n notification) {
	if w == nil {
		return
	}
	w.mu.Lock()
	added := false
	for _, o := range []any{n.old, n.obj} {
		if h, ok := o.(*handoff); ok && !w.stopped {
			w.queue = append(w.queue, h)
			added = true
		}
	}
	w.mu.Unlock()
	if added {
		poke(w.wake)
	}
}

// stop ends every run; what is queued is dropped.
func (w *warmer) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	w.stopped = true
	w.queue, w.head = nil, 0
	close(w.done)
}

// next waits for the oldest queued handoff; false once stopped.
func (w *warmer) next() (*handoff, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.head == len(w.queue) && !w.stopped {
		w.mu.Unlock()
		select {
		case <-w.wake:
		case <-w.done:
		}
		w.mu.Lock()
	}
	if w.stopped {
		return nil, false
	}
	h := w.queue[w.head]
	w.queue[w.head] = nil
	if w.head++; w.head == len(w.queue) {
		w.queue, w.head = w.queue[:0], 0
		if cap(w.queue) > keptBacklog {
			w.queue = nil
		}
	} else {
		poke(w.wake) // more for a sibling
	}
	return h, true
}

// run warms handoffs until stopped.
func (w *warmer) run() {
	for {
		h, ok := w.next()
		if !ok {
			return
		}
		if !h.wanted() {
			continue
		}
		size := h.rec.decodedSize()
		for !w.budget.chargeAhead(size) {
			select {
			case <-w.budget.room:
			case <-w.done:
				return
			}
		}
		poke(w.budget.room) // room may be left for a sibling
		h.warm(size)
	}
}

// poke leaves a signal in c (capacity 1) unless one is there.
func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
