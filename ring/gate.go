package ring

import (
	"sync"
	"sync/atomic"
)

// gate decides, at the moment of each handler call, whether this replica
// handles an object's bucket. The ring's loop opens and closes buckets;
// handlers read the bits without locking. Closing waits for every call
// that was already past the gate, so once close returns no handler is
// still working on a closed bucket.
type gate struct {
	bits []atomic.Uint64
	// calls is read-locked around each handler call that passed, and
	// write-locked by close to wait for them.
	calls sync.RWMutex
	// told reports each change (see Config.OnHandlingChange); never nil.
	told func(opened bool, s set)
}

func newGate(n int, told func(opened bool, s set)) *gate {
	return &gate{bits: make([]atomic.Uint64, (n+63)/64), told: told}
}

func (g *gate) holds(b int) bool { return g.bits[b/64].Load()&(1<<(b%64)) != 0 }

// open lets calls for the buckets of s through.
func (g *gate) open(s set) {
	for i, w := range s.words {
		g.bits[i].Or(w)
	}
	g.told(true, s)
}

// close stops calls for the buckets of s and returns once the calls that
// had passed for any bucket have returned.
func (g *gate) close(s set) {
	was := g.take(s)
	g.calls.Lock()
	g.calls.Unlock() //nolint:staticcheck // an empty critical section: a barrier
	g.told(false, was)
}

// shut stops calls for the buckets of s without waiting: what fencing
// does, since a call stuck in a handler must not delay it.
func (g *gate) shut(s set) { g.told(false, g.take(s)) }

// take closes the buckets of s and returns those of them that were open.
func (g *gate) take(s set) set {
	was := newSet(s.n)
	for i, w := range s.words {
		was.words[i] = g.bits[i].And(^w) & w
	}
	return was
}

// call runs f if bucket b is open, and says whether it did.
func (g *gate) call(b int, f func()) bool {
	g.calls.RLock()
	defer g.calls.RUnlock()
	if !g.holds(b) {
		return false
	}
	f()
	return true
}

// snapshot returns the open buckets.
func (g *gate) snapshot(n int) set {
	s := newSet(n)
	for i := range s.words {
		s.words[i] = g.bits[i].Load()
	}
	return s
}
