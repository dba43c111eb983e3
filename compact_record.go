package cache

import (
	"sync"
	"sync/atomic"

	"github.com/kreflector/cache/internal/compact"
)

// compactRecord is what a compact store holds for one object: its key,
// its resourceVersion, its index values, and the object encoded and
// compressed (or, for a type with no codec, the object itself). A record
// never changes once packed, but for hot, the read cache's handle on the
// decoded object. Records also travel where objects would (an informer's
// queue and its handlers' backlogs), so that nothing on the way keeps the
// decoded object: see resolveCompact.
type compactRecord struct {
	key string
	// rv is the object's resourceVersion as a number, 0 if it is not one
	// (see setRV).
	rv uint64
	// idx holds the object's value for each index, in the order of the
	// packing store's index names at packing time, when every index has
	// exactly one (see recordIndex; odd holds any other form).
	idx values
	// data is the packed encoding, when pk is set (otherwise the object
	// is kept as it is: see rawObject).
	pk   *packer
	data compact.Frozen
	// odd holds what few records have, so that the others do without:
	// never changed once set (see changeOdd), so read without a lock.
	odd atomic.Pointer[recordOdd]
	// hot is the decoded object while the read cache keeps it.
	hot atomic.Pointer[hotEntry]
	// fresh is the object just packed, carried to an informer's store,
	// and pos the record's place in the packing order (see
	// compactStore.stage).
	fresh atomic.Pointer[hotEntry]
	pos   int64
	// state is the record's bit retired (set once the record has left
	// its store: see readCache.retire), and above it the number of the
	// last Replace that listed it (see compactStore.replace).
	state atomic.Uint32
	// plain is the length of the encoding, before compression.
	plain uint32
	// uid is the FNV-1a hash of the object's UID as shard.Key.Hash
	// computes it, or 0 if the object has none: what a sharded relist
	// checks a held record against without decoding it (see
	// shardSpec.heldIn).
	uid uint64
}

// decodedSize estimates the heap of the record's decoded object.
func (r *compactRecord) decodedSize() int64 { return decodedSize(int(r.plain)) }

// recordOdd is a record's rarely set fields.
type recordOdd struct {
	// idxErr says why an index function failed on the object (it wraps
	// ErrIndexerFailed).
	idxErr error
	// raw is the object itself, for a type with no codec.
	raw any
	// idx, when not nil, holds the object's values for each index, where
	// some index has none or several (see recordIndex).
	idx [][]string
	// rv is the object's resourceVersion where it is not a number in
	// canonical form (see setRV).
	rv string
}

// changeOdd sets r's rarely set fields to what change makes of a copy of
// them: a record's readers take them without its store's lock, so they
// are never changed in place. Writes are serialized by the store's lock,
// or made before the record is shared.
func (r *compactRecord) changeOdd(change func(o *recordOdd)) {
	var o recordOdd
	if old := r.odd.Load(); old != nil {
		o = *old
	}
	change(&o)
	r.odd.Store(&o)
}

// indexErr is why an index function failed on the object, nil if none.
func (r *compactRecord) indexErr() error {
	o := r.odd.Load()
	if o == nil {
		return nil
	}
	return o.idxErr
}

// rawObject is the object of a record with no encoding.
func (r *compactRecord) rawObject() any {
	o := r.odd.Load()
	if o == nil {
		return nil
	}
	return o.raw
}

// packer encodes and compresses the objects of one Go type for one
// store, and decodes them through the store's read cache.
type packer struct {
	codec    *compact.Codec
	squeezer *compact.Squeezer // nil: records are not compressed
	cache    *readCache
}

// decodedSize estimates a decoded object's heap from its encoding's
// length: a realistic Pod's protobuf is about 4 KB, its Go object about
// 12.5 KB.
func decodedSize(encoded int) int64 { return 3 * int64(encoded) }

// pack returns obj's encoding, compressed unless the store says not,
// and the encoding's length; key comes back too, in the same new memory
// just ahead of the bytes (one allocation for the record to hold, which
// the collector marks once).
func (p *packer) pack(key string, obj any) (string, compact.Frozen, int, error) {
	buf := encodeBuffers.Get().(*[]byte)
	defer encodeBuffers.Put(buf)
	b, err := p.codec.Encode((*buf)[:0], obj)
	if cap(b) <= maxPooledBuffer {
		*buf = b[:0]
	}
	if err != nil {
		return "", "", 0, err
	}
	var out []byte
	if p.squeezer == nil {
		out = append(append(make([]byte, 0, len(key)+len(b)), key...), b...)
	} else {
		out = p.squeezer.SqueezeAfter(key, b)
	}
	whole := compact.Freeze(out)
	return string(whole[:len(key)]), whole[len(key):], len(b), nil
}

// encodeBuffers hold the buffers objects are encoded into before they are
// compressed or copied, up to maxPooledBuffer bytes each.
var encodeBuffers = sync.Pool{New: func() any { return new([]byte) }}

// expandBuffers hold the buffers records are expanded into before they
// are decoded (the decoded object shares no memory with them), up to
// maxPooledBuffer bytes each.
var expandBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledBuffer = 64 << 10

// object returns the record's object for a read: the one kept, the read
// cache's (marked as read, so the cache keeps it longer), or a new one
// decoded from its bytes (then kept in the read cache). Readers that miss
// at once decode once (see readCache).
func (r *compactRecord) object() (any, error) { return r.load(true) }

// forHandlers returns the record's object as object does, for a
// notification: the cache's entry is not marked, since the handlers'
// reads, one per notification, say nothing of what will be read again.
func (r *compactRecord) forHandlers() (any, error) { return r.load(false) }

func (r *compactRecord) load(mark bool) (any, error) {
	if r.pk == nil {
		return r.rawObject(), nil
	}
	c := r.pk.cache
	if obj, ok := c.get(r, mark); ok {
		c.hits.Add(1)
		return obj, nil
	}
	mu := c.decodeLock(r)
	mu.Lock()
	defer mu.Unlock()
	if obj, ok := c.get(r, mark); ok {
		c.hits.Add(1)
		return obj, nil
	}
	c.misses.Add(1)
	return r.decode()
}

// decode decodes the record's bytes and keeps the object in the read
// cache.
func (r *compactRecord) decode() (any, error) {
	c := r.pk.cache
	plain := r.data.Bytes()
	if r.pk.squeezer != nil {
		buf := expandBuffers.Get().(*[]byte)
		defer expandBuffers.Put(buf)
		var err error
		if plain, err = r.pk.squeezer.Expand(*buf, plain); err != nil {
			return nil, err
		}
		if cap(plain) <= maxPooledBuffer {
			*buf = plain[:0]
		}
	}
	obj, err := r.pk.codec.Decode(plain)
	if err != nil {
		return nil, err
	}
	c.decodes.Add(1)
	c.put(r, obj, decodedSize(len(plain)))
	return obj, nil
}

// size is what the record costs the heap, about: its bytes and headers.
func (r *compactRecord) size() int64 {
	n := int64(len(r.key) + len(r.data) + 112 + 16*r.idx.n)
	if o := r.odd.Load(); o != nil {
		n += 64 + int64(len(o.rv))
		for _, vs := range o.idx {
			n += 24 + 16*int64(len(vs))
		}
	}
	return n
}

// resolveCompact returns what a handler is given for obj: a record's
// object, decoded if the read cache no longer has it; a tombstone whose
// object is a record, with the object; anything else as it is. A record
// whose bytes no longer decode (they decoded when packed: this is not
// expected) is returned as it is, for undecodable to find.
func resolveCompact(obj any) any {
	switch o := obj.(type) {
	case *handoff:
		return o.take()
	case *compactRecord:
		if v, err := o.forHandlers(); err == nil {
			return v
		}
	case DeletedFinalStateUnknown:
		if r, ok := o.Obj.(*compactRecord); ok {
			o.Obj = resolveCompact(r)
			return o
		}
	}
	return obj
}

// undecodable says whether either of a resolved notification's objects is
// a record that did not decode (see resolveCompact), and its key: a
// handler is never given a record.
func undecodable(objs ...any) (string, bool) {
	for _, o := range objs {
		if t, ok := o.(DeletedFinalStateUnknown); ok {
			o = t.Obj
		}
		if r, ok := o.(*compactRecord); ok {
			return r.key, true
		}
	}
	return "", false
}

// The record's state: the bit retired, and the Replace mark above it.
const (
	stateRetired   = 1
	stateMarkShift = 1
)

// retire marks the record as having left its store.
func (r *compactRecord) retire() { r.state.Or(stateRetired) }

// isRetired says whether the record has left its store.
func (r *compactRecord) isRetired() bool { return r.state.Load()&stateRetired != 0 }

// mark records that Replace number m lists the record.
func (r *compactRecord) mark(m uint32) {
	for {
		st := r.state.Load()
		if r.state.CompareAndSwap(st, st&stateRetired|m<<stateMarkShift) {
			return
		}
	}
}

// marked says whether Replace number m listed the record.
func (r *compactRecord) marked(m uint32) bool {
	return r.state.Load()>>stateMarkShift == m&(1<<(32-stateMarkShift)-1)
}
