package cache

import (
	"github.com/kreflector/cache/internal/compact"
)

// CompactOptions configures a compact store (NewCompactIndexer, or an
// informer's store with ReflectorOptions.Compact).
//
// A compact store holds each object as its encoding: Kubernetes' own API
// types as protobuf (the form kube-apiserver sends), unstructured objects
// as CBOR, compressed with S2 against a dictionary trained on the store's
// first few hundred objects. A realistic Pod then costs about 1.5 KiB of
// heap instead of about 13 KiB. Objects of other Go types are kept as
// they are. Keys and index values are computed once, when an object is
// written.
//
// What differs from client-go's store, and what it costs:
//   - Reads (Get, GetByKey, List, ByIndex, Index, listers) return a decoded
//     object. A read of an object the read cache holds returns the same
//     pointer as the last read; otherwise it decodes a new object (tens of
//     microseconds for a Pod), so two reads may return different pointers
//     to equal objects. Never write to what a read returns (true of
//     client-go's stores too): the change would be lost, or seen, at
//     random.
//   - A typed object decoded from JSON with an explicitly empty list or
//     map comes back with a nil one; apimachinery's semantic equality and
//     the API treat the two as the same. Objects decoded from protobuf,
//     and unstructured objects, come back reflect.DeepEqual.
//   - A typed object's metav1.Time fields come back whole seconds (as
//     protobuf, and JSON, carry them): an object the server sent is
//     already so, but one made in the process (metav1.Now() in a test's
//     fake client) loses its fraction of a second once a read decodes it.
//   - List and a ByIndex of many objects decode each one not in the read
//     cache (on up to GOMAXPROCS goroutines): reading the whole of a large
//     store costs a decode per object.
//   - An informer's handlers get an object a relist found unchanged as
//     one object for OnUpdate's old and new (as a resync gives it), where
//     client-go gives the held object and the listed copy.
type CompactOptions struct {
	// ReadCacheBytes bounds the decoded objects kept for reads, estimated
	// at three times their encoding's length; negative keeps none (every
	// read decodes). Zero sizes the cache to the store: a thirty-second of
	// the bytes the records hold, at least 4 MiB and at most 256 MiB (for
	// 100,000 realistic Pods, about 4 MiB, some 350 Pods). In an informer,
	// two more bounds apply, each apart: one of the same size to the
	// objects its queue carries decoded to the store (so that handlers get
	// the objects the watch decoded rather than decode them again), and
	// one of the same size but at least 16 MiB when zero to the objects
	// notifications hold for the handlers that have still to take them (so
	// that handlers share one decode, and the informer decodes ahead of
	// them). An update's old object is decoded for the handlers unless the
	// read cache still has it.
	ReadCacheBytes int64
	// Uncompressed holds encodings as they are: more memory (about three
	// times a compressed Pod's), a little less CPU per write and read.
	Uncompressed bool
}

// The read cache's bound when ReadCacheBytes is zero: a share of the
// records' bytes, within a floor and a ceiling.
const (
	readCacheShare   = 32
	readCacheFloor   = 4 << 20
	readCacheCeiling = 256 << 20
)

// handoffFloor is the least an informer's notifications may hold decoded
// when ReadCacheBytes is zero: room for a few handlers to drift a few
// hundred notifications apart on busy cores and still share each decode.
const handoffFloor = 16 << 20

// handoffBytes bounds what an informer's notifications hold decoded.
func (o CompactOptions) handoffBytes(held int64) int64 {
	if o.ReadCacheBytes == 0 {
		return max(o.readCacheBytes(held), handoffFloor)
	}
	return o.readCacheBytes(held)
}

// readCacheBytes is the bound of the read cache, and of what an
// informer's queue carries decoded, for a store whose records hold held
// bytes.
func (o CompactOptions) readCacheBytes(held int64) int64 {
	switch {
	case o.ReadCacheBytes == 0:
		return min(max(held/readCacheShare, readCacheFloor), readCacheCeiling)
	case o.ReadCacheBytes < 0:
		return 0
	}
	return o.ReadCacheBytes
}

// CompactStats are a compact store's figures (see InformerStats.Store).
type CompactStats struct {
	// Objects is how many objects the store holds, Encoded how many of
	// them as bytes (the others' types have no codec).
	Objects, Encoded int
	// BytesHeld is the heap the records take, about: the encodings, keys
	// and index values, and each record's fixed cost.
	BytesHeld int64
	// ReadCacheBytes is the estimated size of the decoded objects the read
	// cache keeps.
	ReadCacheBytes int64
	// ReadHits and ReadMisses count reads of a record answered by the read
	// cache and those that decoded; Decodes counts decodes that succeeded.
	ReadHits, ReadMisses, Decodes uint64
	// Dictionary says whether records are compressed with the trained
	// dictionary yet.
	Dictionary bool
}

// codecFor is compact.For, here so that the store's files need not
// import the package twice.
func codecFor(obj any) *compact.Codec { return compact.For(obj) }
