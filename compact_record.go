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
	// rv is the object's resourceVersion, "" if it has none.
	rv string
	// idx holds the object's values for each index, in the order of the
	// packing store's index names at packing time (an index whose
	// function failed on the object has none); idxErr says why, if one
	// failed (it wraps ErrIndexerFailed).
	idx    [][]string
	idxErr error
	// data is the packed encoding, when pk is set; raw is the object
	// itself otherwise.
	pk   *packer
	data []byte
	raw  any
	// hot is the decoded object while the read cache keeps it.
	hot atomic.Pointer[hotEntry]
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

// pack returns obj's encoding, compressed unless the store says not.
func (p *packer) pack(obj any) ([]byte, int, error) {
	b, err := p.codec.Encode(nil, obj)
	if err != nil {
		return nil, 0, err
	}
	if p.squeezer == nil {
		return b, len(b), nil
	}
	return p.squeezer.Squeeze(b), len(b), nil
}

// expandBuffers hold the buffers records are expanded into before they
// are decoded (the decoded object shares no memory with them), up to
// maxPooledBuffer bytes each.
var expandBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledBuffer = 64 << 10

// object returns the record's object: the one kept, the read cache's, or
// a new one decoded from its bytes (then kept in the read cache).
func (r *compactRecord) object() (any, error) {
	if r.pk == nil {
		return r.raw, nil
	}
	c := r.pk.cache
	if obj, ok := c.get(r); ok {
		c.hits.Add(1)
		return obj, nil
	}
	c.misses.Add(1)
	plain := r.data
	if r.pk.squeezer != nil {
		buf := expandBuffers.Get().(*[]byte)
		defer expandBuffers.Put(buf)
		var err error
		if plain, err = r.pk.squeezer.Expand(*buf, r.data); err != nil {
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
	n := int64(len(r.key) + len(r.rv) + len(r.data) + 128)
	for _, vs := range r.idx {
		n += 24 + 16*int64(len(vs))
	}
	return n
}

// sameVersion says whether r holds the object at resourceVersion rv
// (never for an empty one).
func (r *compactRecord) sameVersion(rv string) bool { return rv != "" && r.rv == rv }

// resolveCompact returns what a handler is given for obj: a record's
// object, decoded if the read cache no longer has it; a tombstone whose
// object is a record, with the object; anything else as it is. A record
// whose bytes no longer decode (they decoded when packed: this is not
// expected) is given as the tombstone-free record itself, and logged by
// the store.
func resolveCompact(obj any) any {
	switch o := obj.(type) {
	case *compactRecord:
		if v, err := o.object(); err == nil {
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
