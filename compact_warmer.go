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
// next handoff (or a batch's next object's handoffs, made then unless a
// listener made them first): started by its processor's start and joined
// by its stop.
type warmer struct {
	budget *handoffBudget
	// done is closed by stop.
	done chan struct{}

	mu      sync.Mutex // guards what follows
	queue   []warmItem
	head    int
	stopped bool
	// wake holds a signal when the queue may have grown or the warmer
	// was stopped.
	wake chan struct{}
}

// warmItem is a handoff to warm, or a batch whose objects' handoffs are
// warmed from object at on.
type warmItem struct {
	h  *handoff
	b  *replaceBatch
	at int
}

// newWarmer returns a warmer of the handoffs charged to budget.
func newWarmer(budget *handoffBudget) *warmer {
	return &warmer{budget: budget, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// add queues n's handoffs.
func (w *warmer) add(n notification) {
	if w == nil {
		return
	}
	for _, h := range handoffsOf(n.old, n.obj) {
		if h != nil {
			w.queue1(warmItem{h: h})
		}
	}
}

// addBatch queues b's objects, whose handoffs are made as the warmer
// reaches them (unless a listener did first).
func (w *warmer) addBatch(b *replaceBatch) {
	if w != nil && b.slots != nil {
		w.queue1(warmItem{b: b})
	}
}

// queue1 queues it, unless the warmer was stopped.
func (w *warmer) queue1(it warmItem) {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	w.queue = append(w.queue, it)
	w.mu.Unlock()
	poke(w.wake)
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

// next waits for the oldest queued item and returns its handoffs (a
// batch's next object's); false once stopped.
func (w *warmer) next() ([2]*handoff, bool) {
	it, at, ok := w.nextItem()
	if !ok || it.b == nil {
		return [2]*handoff{it.h}, ok
	}
	return it.b.ahead(at), true
}

// nextItem waits for the oldest queued item, and for a batch, takes its
// next object (at); false once stopped.
func (w *warmer) nextItem() (warmItem, int, bool) {
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
		return warmItem{}, 0, false
	}
	it := &w.queue[w.head]
	at := it.at
	if it.b != nil {
		if it.at++; it.at < len(it.b.objs) {
			poke(w.wake) // more for a sibling
			return *it, at, true
		}
	}
	item := *it
	w.queue[w.head] = warmItem{}
	if w.head++; w.head == len(w.queue) {
		w.queue, w.head = w.queue[:0], 0
		if cap(w.queue) > keptBacklog {
			w.queue = nil
		}
	} else {
		poke(w.wake) // more for a sibling
	}
	return item, at, true
}

// run warms handoffs until stopped.
func (w *warmer) run() {
	for {
		hs, ok := w.next()
		if !ok {
			return
		}
		for _, h := range hs {
			if h != nil && !w.warmOne(h) {
				return
			}
		}
	}
}

// warmOne decodes h ahead, once there is room in the budget, unless
// no listener needs it (any longer) or it could never fit in the
// warmer's half of the budget (a budget of nothing, with no read cache;
// an object larger than half of it): its listeners then decode it
// themselves. False if the warmer was stopped meanwhile.
func (w *warmer) warmOne(h *handoff) bool {
	if !h.wanted() {
		return true
	}
	size := h.rec.decodedSize()
	for !w.budget.chargeAhead(size) {
		if size > w.budget.limit.Load()/2 || !h.wanted() {
			return true
		}
		select {
		case <-w.budget.room:
		case <-w.done:
			return false
		}
	}
	poke(w.budget.room) // room may be left for a sibling
	h.warm(size)
	return true
}

// poke leaves a signal in c (capacity 1) unless one is there.
func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
