package cache

import (
	"sync"
	"sync/atomic"
)

// handoff is one object of a notification, a compact store's record, as
// the listeners it was given to share it: the first to deliver it decodes
// it (unless the read cache had it when the notification was made), and
// the others are given the same object, which the handoff holds until the
// last of them has taken it, within its store's handoff budget. Without
// room in the budget a handoff holds nothing, and each listener reads the
// record through the read cache, as if alone.
//
// Every listener a handoff is given to takes it exactly once (twice when
// it stands for both of an update's objects: see handOffPair): at
// delivery (take), or when its backlog is dropped (abandon); the last
// gives the budget back.
type handoff struct {
	rec *compactRecord

	mu sync.Mutex // guards what follows
	// obj is the object held for the listeners still to take it (nil:
	// none), charged to the budget.
	obj any
	// pending is how many takes are still to come.
	pending int
}

// handoffBudget bounds the decoded objects handoffs hold, in estimated
// bytes. room holds a signal when some was given back (for the warmer).
type handoffBudget struct {
	// limit may change (see compactStore.resize).
	limit atomic.Int64
	used  atomic.Int64
	room  chan struct{}
}

// newHandoffBudget returns a budget of limit bytes.
func newHandoffBudget(limit int64) *handoffBudget {
	b := &handoffBudget{room: make(chan struct{}, 1)}
	b.limit.Store(limit)
	return b
}

// chargeAhead is charge for the warmer, which may take half the budget
// at most: the rest stays for the listeners, so that the first to decode
// an object the warmer has not reached can hold it for the others.
func (b *handoffBudget) chargeAhead(n int64) bool { return b.chargeWithin(n, b.limit.Load()/2) }

// give gives n bytes back.
func (b *handoffBudget) give(n int64) {
	b.used.Add(-n)
	poke(b.room)
}

// charge takes n bytes of the budget, if there is room.
func (b *handoffBudget) charge(n int64) bool { return b.chargeWithin(n, b.limit.Load()) }

// chargeWithin takes n bytes if what is taken stays within limit.
func (b *handoffBudget) chargeWithin(n, limit int64) bool {
	if b.used.Add(n) > limit {
		b.used.Add(-n)
		return false
	}
	return true
}

// handOff returns what a notification carries for obj, to be taken k
// times: a handoff for a record with bytes, holding its object now if the
// read cache has it; obj itself otherwise.
func handOff(obj any, k int) any {
	r, ok := obj.(*compactRecord)
	if !ok || r.pk == nil {
		return obj
	}
	h := &handoff{rec: r, pending: k}
	c := r.pk.cache
	if v, ok := c.get(r, false); ok && c.handoffs.charge(r.decodedSize()) {
		c.hits.Add(1)
		h.obj = v
	}
	return h
}

// take returns the handoff's object for one listener: the held one, or the
// record's (decoded now if the read cache has it no longer; the record
// itself if its bytes do not decode, as resolveCompact does).
func (h *handoff) take() any {
	h.mu.Lock()
	defer h.mu.Unlock()
	obj := h.obj
	if obj == nil {
		v, err := h.rec.forHandlers()
		if err != nil {
			h.done()
			return h.rec
		}
		obj = v
		if h.pending > 1 && h.rec.pk.cache.handoffs.charge(h.rec.decodedSize()) {
			h.obj = v
		}
	}
	h.done()
	return obj
}

// wanted says whether a listener has still to take h, and h holds nothing.
func (h *handoff) wanted() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pending > 0 && h.obj == nil
}

// warm decodes h's object for the listeners still to take it, charged
// size bytes of the budget (given back if no listener needs it any more,
// or if it does not decode).
func (h *handoff) warm(size int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	budget := h.rec.pk.cache.handoffs
	if h.pending == 0 || h.obj != nil {
		budget.give(size)
		return
	}
	v, err := h.rec.forHandlers()
	if err != nil {
		budget.give(size)
		return
	}
	h.obj = v
}

// abandon is take for a listener that will not deliver the notification.
func (h *handoff) abandon() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.done()
}

// done counts one listener off; the last lets the object go. h.mu is held.
func (h *handoff) done() {
	h.pending--
	if h.pending == 0 && h.obj != nil {
		h.obj = nil
		h.rec.pk.cache.handoffs.give(h.rec.decodedSize())
	}
}

// handOffAll returns n as given to k listeners (see handOff).
func handOffAll(n notification, k int) notification {
	if n.kind == notifySnapshot {
		return n
	}
	n.old, n.obj = handOffPair(n.old, n.obj, k)
	return n
}

// handOffPair hands off an update's old and new objects to k listeners:
// one record as both (an object a relist found unchanged, a resync) is
// one handoff, which each listener takes twice and so decodes once.
func handOffPair(old, obj any, k int) (any, any) {
	if r, ok := obj.(*compactRecord); ok && old == obj && r.pk != nil {
		h := handOff(obj, 2*k)
		return h, h
	}
	return handOff(old, k), handOff(obj, k)
}

// handoffsOf returns the distinct handoffs among old and obj (nil for
// none).
func handoffsOf(old, obj any) (hs [2]*handoff) {
	hs[0], _ = old.(*handoff)
	if h, ok := obj.(*handoff); ok && h != hs[0] {
		hs[1] = h
	}
	return hs
}

// abandonAll abandons n's handoffs.
func abandonAll(n notification) {
	for _, o := range []any{n.old, n.obj} {
		if h, ok := o.(*handoff); ok {
			h.abandon()
		}
	}
}
