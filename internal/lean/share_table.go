package lean

import (
	"hash/maphash"
	"strings"
	"sync"
)

// MinSpan is the fewest objects a generation of a Table spans.
const MinSpan = 1024

// stripe is one of a Table's stripes: the canonical copy of each value
// the objects shared through it had, for ShareStrings, and of each
// shareable map, for ShareMaps.
//
// Bounded by generations, which the Table counts for all its stripes:
// the values met while the Table walks its current span objects are in
// cur, those of the span objects before in prev; once the Table has
// walked span objects, every stripe's cur becomes its prev and the older
// generation is dropped. A value met again moves to cur, so what the live objects keep
// meeting stays; a value not met for two generations is forgotten (should
// it come back, it gets a new canonical copy). span is at least the
// number of objects of the latest sync (see Synced), so a relist meets
// every value of the cache in the table, and the table holds at most the
// distinct values of 2×span objects: it follows the size of the cache,
// not the history of churn through it.
//
// Concurrency: an object is shared under mu, held by the caller of
// shareLocked, as is catchUp; size takes it.
type stripe struct {
	mu sync.Mutex
	// cur and prev map each value to its canonical copy; curBoxes and
	// prevBoxes map unstructured values (strings and numbers in an
	// interface) to their canonical boxes.
	cur, prev           map[string]string
	curBoxes, prevBoxes map[any]any
	// curMaps and prevMaps map each shareable map's content to the map
	// that stands for it (see share_maps.go).
	curMaps, prevMaps map[mapID]any
	// gen is the Table's generation that cur holds.
	gen int64
	// strings and maps say what is shared: strings and byte slices
	// (ShareStrings), whole maps (ShareMaps). Set at construction.
	strings, maps bool
	seed          maphash.Seed
}

func newStripe(strings, maps bool, seed maphash.Seed) *stripe {
	return &stripe{
		cur: map[string]string{}, curBoxes: map[any]any{}, curMaps: map[mapID]any{},
		strings: strings, maps: maps, seed: seed,
	}
}

// shareLocked shares obj's values through t, whose lock the caller holds,
// in the Table's generation gen.
func (t *stripe) shareLocked(obj any, gen int64) {
	t.catchUp(gen)
	shareObjectIn(t, obj)
}

// catchUp brings t to the Table's generation gen: one generation on, cur
// becomes prev; two or more, both are dropped.
func (t *stripe) catchUp(gen int64) {
	for i := t.gen; i < gen && i < t.gen+2; i++ {
		t.rotate()
	}
	t.gen = max(t.gen, gen)
}

// rotate starts a generation.
func (t *stripe) rotate() {
	t.prev, t.prevBoxes = t.cur, t.curBoxes
	t.cur = make(map[string]string, len(t.prev))
	t.curBoxes = make(map[any]any, len(t.prevBoxes))
	t.prevMaps, t.curMaps = t.curMaps, make(map[mapID]any, len(t.curMaps))
}

// canon returns the canonical copy of s, a non-empty string. A new value
// is copied, so the table never keeps alive memory that s might share
// with something larger (a decoder's buffer).
func (t *stripe) canon(s string) string {
	if c, ok := t.cur[s]; ok {
		return c
	}
	c, ok := t.prev[s]
	if !ok {
		c = strings.Clone(s)
	}
	t.cur[c] = c
	return c
}

// box returns the canonical box of v, a non-empty string, an int64 or a
// float64 held in an interface.
func (t *stripe) box(v any) any {
	if c, ok := t.curBoxes[v]; ok {
		return c
	}
	c, ok := t.prevBoxes[v]
	if !ok {
		if s, isString := v.(string); isString {
			c = any(t.canon(s))
		} else {
			c = v
		}
	}
	t.curBoxes[c] = c
	return c
}

// size is the number of values and maps the stripe holds, both
// generations.
func (t *stripe) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.cur) + len(t.prev) + len(t.curBoxes) + len(t.prevBoxes) + len(t.curMaps) + len(t.prevMaps)
}
