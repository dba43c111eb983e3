package cache

import (
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
}

// readCache keeps recently read objects of a compact store, bounded by
// their estimated size in bytes, and evicts with the clock algorithm: a
// read sets the entry's ref bit (no lock), the hand clears it once and
// evicts an entry whose bit is clear. An entry lives in the ring and in
// its record's hot pointer; eviction and drop clear the pointer first
// (compare-and-swap), so each entry's bytes are given back once.
type readCache struct {
	limit int64 // 0: keeps nothing

	mu   sync.Mutex // guards what follows
	used int64
	ring []*hotEntry
	hand int
	// dead counts the ring's entries dropped but not yet swept out.
	dead int

	hits, misses, decodes atomic.Uint64
}

// get returns rec's decoded object if the cache has it.
func (c *readCache) get(rec *compactRecord) (any, bool) {
	h := rec.hot.Load()
	if h == nil {
		return nil, false
	}
	h.ref.Store(true)
	return h.obj, true
}

// put keeps obj, rec's object, estimated at size bytes.
func (c *readCache) put(rec *compactRecord, obj any, size int64) {
	if c.limit <= 0 || size > c.limit {
		return
	}
	h := &hotEntry{rec: rec, obj: obj, size: size}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !rec.hot.CompareAndSwap(nil, h) {
		return // another reader put it first
	}
	for c.used+size > c.limit && len(c.ring) > 0 {
		c.evictOne()
	}
	c.ring = append(c.ring, h)
	c.used += size
}

// evictOne moves the hand one entry on, evicting or sparing it.
func (c *readCache) evictOne() {
	if c.hand >= len(c.ring) {
		c.hand = 0
	}
	h := c.ring[c.hand]
	if h.rec.hot.Load() == h && h.ref.Swap(false) {
		c.hand++
		return
	}
	if h.rec.hot.CompareAndSwap(h, nil) {
		c.used -= h.size
	} else {
		c.dead = max(c.dead-1, 0)
	}
	last := len(c.ring) - 1
	c.ring[c.hand], c.ring[last] = c.ring[last], nil
	c.ring = c.ring[:last]
}

// drop forgets rec's object (rec left the store).
func (c *readCache) drop(rec *compactRecord) {
	h := rec.hot.Load()
	if h == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !rec.hot.CompareAndSwap(h, nil) {
		return
	}
	c.used -= h.size
	if c.dead++; c.dead > len(c.ring)/2 {
		c.sweep()
	}
}

// sweep takes the dropped entries out of the ring, so that it keeps no
// object that left the store.
func (c *readCache) sweep() {
	live := c.ring[:0]
	for _, h := range c.ring {
		if h.rec.hot.Load() == h {
			live = append(live, h)
		}
	}
	clear(c.ring[len(live):])
	c.ring, c.hand, c.dead = live, 0, 0
}

// bytes is the estimated size of what the cache keeps.
func (c *readCache) bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}
