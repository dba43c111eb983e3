package cache

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// hotEntry is a decoded object the read cache keeps for a record.
type hotEntry struct {
	rec  *compactRecord
	obj  any
	size int64
	// ref is set by each read: the clock hand spares it once.
	ref atomic.Bool
	// prev and next link the entries in a circle (guarded by the cache's
	// lock).
	prev, next *hotEntry
}

// readCache keeps recently packed and read objects of a compact store,
// bounded by their estimated size in bytes, and evicts with the clock
// algorithm: entries sit on a circle in the order they came, a read sets
// the entry's ref bit (no lock), and the hand, moving round as room is
// needed, clears a set bit once and evicts an entry whose bit is clear
// (or whose record is retired: see retire). A new entry goes in just
// behind the hand, so the hand reaches it last.
//
// An entry lives on the circle and in its record's hot pointer; eviction
// and drop clear the pointer first (compare-and-swap) and unlink the
// entry, so each entry's bytes are given back once. A miss decodes under
// one of decodeLocks (chosen by the record's key), so that readers of the
// same record at once (an informer's handlers, given one notification)
// decode it once and share the object.
type readCache struct {
	// limit is the bound (0: keeps nothing); it may change (see
	// compactStore.resize), the cache shrinking to it at the next put.
	limit atomic.Int64

	mu   sync.Mutex // guards what follows
	used int64
	hand *hotEntry // nil: the circle is empty
	n    int       // entries on the circle

	decodeLocks [16]sync.Mutex
	seed        maphash.Seed

	hits, misses, decodes atomic.Uint64

	// handoffs bounds what notifications hold decoded for their listeners
	// (see handoff): not the cache's, but the same store's.
	handoffs *handoffBudget
}

// newReadCache returns a cache bounded to limit bytes (≤ 0: none kept),
// with a handoff budget of handoffs bytes.
func newReadCache(limit, handoffs int64) *readCache {
	c := &readCache{seed: maphash.MakeSeed(), handoffs: newHandoffBudget(handoffs)}
	c.limit.Store(limit)
	return c
}

// get returns rec's decoded object if the cache has it, marking its entry
// as read if mark is set.
func (c *readCache) get(rec *compactRecord, mark bool) (any, bool) {
	h := rec.hot.Load()
	if h == nil {
		return nil, false
	}
	if mark && !h.ref.Load() {
		h.ref.Store(true)
	}
	return h.obj, true
}

// decodeLock is the lock a miss on rec decodes under.
func (c *readCache) decodeLock(rec *compactRecord) *sync.Mutex {
	return &c.decodeLocks[maphash.String(c.seed, rec.key)%uint64(len(c.decodeLocks))]
}

// put keeps obj, rec's object, estimated at size bytes, unless it already
// has one for rec or the object alone is over the bound.
func (c *readCache) put(rec *compactRecord, obj any, size int64) {
	limit := c.limit.Load()
	if limit <= 0 || size > limit {
		return
	}
	h := &hotEntry{rec: rec, obj: obj, size: size}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !rec.hot.CompareAndSwap(nil, h) {
		return // another reader put it first
	}
	for c.used+size > limit && c.hand != nil {
		c.evictOne()
	}
	c.link(h)
	c.used += size
}

// link puts h on the circle just behind the hand.
func (c *readCache) link(h *hotEntry) {
	c.n++
	if c.hand == nil {
		h.prev, h.next, c.hand = h, h, h
		return
	}
	h.prev, h.next = c.hand.prev, c.hand
	h.prev.next, c.hand.prev = h, h
}

// unlink takes h off the circle, moving the hand on if it points at h,
// and gives its bytes back.
func (c *readCache) unlink(h *hotEntry) {
	c.n--
	c.used -= h.size
	if c.n == 0 {
		c.hand = nil
	} else {
		h.prev.next, h.next.prev = h.next, h.prev
		if c.hand == h {
			c.hand = h.next
		}
	}
	h.prev, h.next = nil, nil
}

// evictOne moves the hand one entry on: it spares an entry read since its
// last visit (clearing the bit) unless its record is retired, and evicts
// it otherwise.
func (c *readCache) evictOne() {
	h := c.hand
	if h.ref.Swap(false) && !h.rec.isRetired() {
		c.hand = h.next
		return
	}
	h.rec.hot.CompareAndSwap(h, nil)
	c.unlink(h)
}

// drop forgets rec's object now (rec left a store no one reads replaced
// records of).
func (c *readCache) drop(rec *compactRecord) {
	if rec.hot.Load() == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if h := rec.hot.Load(); h != nil && rec.hot.CompareAndSwap(h, nil) {
		c.unlink(h)
	}
}

// retire marks rec as replaced in, or removed from, its store: its object
// stays until the hand reaches it, whatever its ref bit, so that the
// handlers about to be given it (as the old object of an update, or the
// deleted one) read it without decoding, while it leaves room sooner than
// the store's current objects.
func (c *readCache) retire(rec *compactRecord) { rec.retire() }

// bytes is the estimated size of what the cache keeps.
func (c *readCache) bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}

// entries is how many objects the cache keeps.
func (c *readCache) entries() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}
