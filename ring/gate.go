package ring

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// gate decides, at the moment of each handler call, whether this replica
// handles an object's bucket. The ring's loop opens and closes buckets;
// Handles reads the bits without locking. Closing waits for every call
// that had passed the gate before it closed (not for later ones, so a busy
// informer cannot starve it), so once close returns no handler is still
// working on a closed bucket.
type gate struct {
	bits []atomic.Uint64
	// gens counts, per bucket, the times it was opened: a handler passes
	// a bucket's events only once it has been handed the bucket's current
	// opening (see opening).
	gens []atomic.Uint32
	// pending are the buckets planned for this replica: while one is
	// closed, handlers keep its deletes for when it opens.
	pending []atomic.Uint64
	// told reports each change (see Config.OnHandlingChange); never nil.
	told func(opened bool, s set)
	// now is the ring's clock; deadline, once set, is the fencing
	// deadline: from then on no call passes, whether or not the fencing
	// goroutine has run yet (a process resumed after a pause past its
	// lease runs its handlers' goroutines and its fencer's in any order).
	now      func() time.Time
	deadline atomic.Pointer[time.Time]

	// mu orders calls passing the gate against close: a call checks its
	// bit and takes a number under it, close clears bits and notes the
	// next number under it.
	mu      sync.Mutex
	next    uint64
	active  map[uint64]struct{}
	waiters []waiter
}

// waiter is a close waiting for the calls numbered below before.
type waiter struct {
	before uint64
	done   chan struct{}
}

func newGate(n int, now func() time.Time, told func(opened bool, s set)) *gate {
	w := (n + 63) / 64
	return &gate{bits: make([]atomic.Uint64, w), gens: make([]atomic.Uint32, n), pending: make([]atomic.Uint64, w), now: now, told: told, active: map[uint64]struct{}{}}
}

// fenceAt sets the fencing deadline (see gate.deadline).
func (g *gate) fenceAt(d time.Time) { g.deadline.Store(&d) }

// handles says whether bucket b is open and the fencing deadline has not
// passed: whether a call for it would pass now.
func (g *gate) handles(b int) bool { return g.holds(b) && !g.late() }

// late says whether the fencing deadline has passed.
func (g *gate) late() bool {
	d := g.deadline.Load()
	return d != nil && !g.now().Before(*d)
}

// setPending records the buckets planned for this replica.
func (g *gate) setPending(s set) {
	for i, w := range s.words {
		g.pending[i].Store(w)
	}
}

// planned says whether bucket b is planned for this replica.
func (g *gate) planned(b int) bool { return g.pending[b/64].Load()&(1<<(b%64)) != 0 }

// awaits says whether bucket b is planned for this replica but closed.
func (g *gate) awaits(b int) bool { return g.planned(b) && !g.holds(b) }

func (g *gate) holds(b int) bool { return g.bits[b/64].Load()&(1<<(b%64)) != 0 }

// open lets calls for the buckets of s through and returns the opening,
// which each handler must be handed before it passes their events.
func (g *gate) open(s set) *opening {
	o := &opening{set: s.clone(), gens: make([]uint32, s.n)}
	for _, b := range s.list() {
		o.gens[b] = g.gens[b].Add(1)
	}
	for i, w := range s.words {
		g.bits[i].Or(w)
	}
	g.told(true, s)
	return o
}

// gen is bucket b's current generation: how many times it was opened.
func (g *gate) gen(b int) uint32 { return g.gens[b].Load() }

// gensNow returns every bucket's current generation.
func (g *gate) gensNow() []uint32 {
	out := make([]uint32, len(g.gens))
	for b := range g.gens {
		out[b] = g.gens[b].Load()
	}
	return out
}

// close stops calls for the buckets of s and returns once the calls that
// had passed the gate (for any bucket) have returned.
func (g *gate) close(s set) {
	g.mu.Lock()
	was := g.take(s)
	w := waiter{before: g.next, done: make(chan struct{})}
	if g.oldest() >= w.before {
		close(w.done)
	} else {
		g.waiters = append(g.waiters, w)
	}
	g.mu.Unlock()
	<-w.done
	g.told(false, was)
}

// shut stops calls for the buckets of s without waiting: what fencing
// does, since a call stuck in a handler must not delay it.
func (g *gate) shut(s set) {
	g.mu.Lock()
	was := g.take(s)
	g.mu.Unlock()
	g.told(false, was)
}

// take closes the buckets of s and returns those of them that were open.
func (g *gate) take(s set) set {
	was := newSet(s.n)
	for i, w := range s.words {
		was.words[i] = g.bits[i].And(^w) & w
	}
	return was
}

// call runs f if bucket b is open and the fencing deadline has not
// passed, and says whether it did.
func (g *gate) call(b int, f func()) bool {
	g.mu.Lock()
	if !g.holds(b) || g.late() {
		g.mu.Unlock()
		return false
	}
	id := g.next
	g.next++
	g.active[id] = struct{}{}
	g.mu.Unlock()
	defer g.finish(id)
	f()
	return true
}

// finish ends call id and releases the closes no longer waiting for any
// call.
func (g *gate) finish(id uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.active, id)
	oldest := g.oldest()
	kept := g.waiters[:0]
	for _, w := range g.waiters {
		if w.before <= oldest {
			close(w.done)
		} else {
			kept = append(kept, w)
		}
	}
	g.waiters = kept
}

// oldest is the lowest number of a call in progress, or MaxUint64.
func (g *gate) oldest() uint64 {
	o := uint64(math.MaxUint64)
	for id := range g.active {
		o = min(o, id)
	}
	return o
}

// snapshot returns the open buckets.
func (g *gate) snapshot(n int) set {
	s := newSet(n)
	for i := range s.words {
		s.words[i] = g.bits[i].Load()
	}
	return s
}
