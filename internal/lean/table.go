package lean

import (
	"hash/maphash"
	"runtime"
	"sync"
	"sync/atomic"
)

// MaxStripes bounds a Table's stripes: each holds its own canonical copy
// of a value, so a value met by objects shared at once on several
// goroutines may be held up to that many times.
const MaxStripes = 4

// Table holds the canonical copy of each value its Reflector's objects
// had, for ShareStrings, and of each shareable map, for ShareMaps. It is
// one Reflector's own: its memory goes with the Reflector, and no other
// Reflector's lookups contend with its own.
//
// It is made of stripes, each a table of its own behind its own lock
// (see stripe for their bound by generations). An object is shared
// through the first stripe whose lock is free, and waits for the first
// one only if none is. Objects shared one at a time all go through the
// first stripe, so each value is held once; objects shared at once (on a
// LIST's decode workers) use as many stripes as there are sharers, up to
// min(GOMAXPROCS, MaxStripes), rather than wait for one lock: a goroutine
// woken from a lock waits for a processor longer than a Pod takes to
// share, and one lock made the workers take turns.
//
// Safe for concurrent use.
type Table struct {
	stripes       []*stripe
	strings, maps bool
	// walked counts the objects shared in the current generation, gen
	// numbers it, and span is how many objects a generation spans;
	// rotating (rare: once per span objects) takes rotating.
	walked, gen, span atomic.Int64
	rotating          sync.Mutex
}

// NewTable returns a table that shares strings and byte slices if
// strings is set, and shareable maps if maps is. Maps must not be shared
// for objects that something may still change in place (a store's
// transform): the change would reach every object sharing the map.
func NewTable(strings, maps bool) *Table {
	return newTable(strings, maps, min(runtime.GOMAXPROCS(0), MaxStripes))
}

// newTable is a table of n stripes (at least one).
func newTable(strings, maps bool, n int) *Table {
	t := &Table{strings: strings, maps: maps}
	t.span.Store(MinSpan)
	seed := maphash.MakeSeed()
	for range max(1, n) {
		t.stripes = append(t.stripes, newStripe(strings, maps, seed))
	}
	return t
}

// SharesStrings says whether t shares strings and byte slices.
func (t *Table) SharesStrings() bool { return t.strings }

// SharesMaps says whether t shares whole maps.
func (t *Table) SharesMaps() bool { return t.maps }

// Share replaces obj's values, in place, by their canonical copies (see
// shareObjectIn). obj must not be read by anyone else meanwhile, nor
// written to afterwards: its values may be shared with other objects.
func (t *Table) Share(obj any) {
	gen := t.count()
	for _, s := range t.stripes {
		if s.mu.TryLock() {
			s.shareLocked(obj, gen)
			s.mu.Unlock()
			return
		}
	}
	s := t.stripes[0]
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shareLocked(obj, gen)
}

// count counts an object and returns its generation: once a generation
// has spanned span objects, the next one starts, and every stripe is
// brought to it at once, so a stripe seldom used (one that only took
// objects while others were busy) forgets what it held as the others do.
func (t *Table) count() int64 {
	if t.walked.Add(1) <= t.span.Load() {
		return t.gen.Load()
	}
	t.rotating.Lock()
	defer t.rotating.Unlock()
	if t.walked.Load() > t.span.Load() {
		t.walked.Store(1)
		gen := t.gen.Add(1)
		for _, s := range t.stripes {
			s.mu.Lock()
			s.catchUp(gen)
			s.mu.Unlock()
		}
	}
	return t.gen.Load()
}

// Synced is told that a sync of items objects completed: a generation
// spans at least that many objects from now on.
func (t *Table) Synced(items int) {
	t.span.Store(int64(max(MinSpan, items)))
}

// Size is the number of values and maps the table holds, both
// generations of every stripe.
func (t *Table) Size() int {
	n := 0
	for _, s := range t.stripes {
		n += s.size()
	}
	return n
}

// Walked is the number of objects shared in the current generation.
func (t *Table) Walked() int { return int(t.walked.Load()) }
