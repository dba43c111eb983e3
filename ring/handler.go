package ring

import (
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
)

// gatedHandler passes the informer's calls to inner only for objects of
// buckets the gate holds open and whose opening this handler has been
// handed (see opening). Every call, the adds of an opening included,
// comes from the informer's one goroutine for this handler, in the order
// of its stream, so per object inner sees versions in order and nothing
// after a delete but the add of a newer object. A delete of a bucket
// planned for this replica but not passed yet is kept, and delivered
// when the bucket opens: a delete that happens during a handoff reaches
// the new owner.
type gatedHandler struct {
	ring  *Ring
	inner clientgocache.ResourceEventHandler

	// seen is, per bucket, the generation of the last opening handed to
	// this handler. Only the handler's goroutine touches it (and
	// newGatedHandler, before the handler is registered).
	seen []uint32
	// handled is the resourceVersion of the last position mark processed:
	// this handler has been handed every change up to it.
	handled atomic.Pointer[string]
	// kept guards deletes, the deletes kept by bucket, then by object key;
	// taken briefly, never around a call to inner.
	kept    sync.Mutex
	deletes map[int]map[string]interface{}
}

var _ cache.SnapshotHandler = &gatedHandler{}

// newGatedHandler returns a handler that passes the buckets open now: a
// handler added to a running informer is first handed the stored
// objects, which are as new as the gate's openings so far.
func newGatedHandler(r *Ring, inner clientgocache.ResourceEventHandler) *gatedHandler {
	return &gatedHandler{ring: r, inner: inner, seen: r.gate.gensNow(), deletes: map[int]map[string]interface{}{}}
}

func (h *gatedHandler) OnAdd(obj interface{}, initial bool) {
	if b, ok := h.ring.bucket(obj); ok {
		h.pass(b, func() { h.inner.OnAdd(obj, initial) })
	}
}

func (h *gatedHandler) OnUpdate(old, obj interface{}) {
	if b, ok := h.ring.bucket(obj); ok {
		h.pass(b, func() { h.inner.OnUpdate(old, obj) })
	}
}

func (h *gatedHandler) OnDelete(obj interface{}) {
	b, ok := h.ring.bucket(obj)
	if !ok || h.pass(b, func() { h.inner.OnDelete(obj) }) || !h.ring.gate.planned(b) {
		return
	}
	key, err := clientgocache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	h.kept.Lock()
	defer h.kept.Unlock()
	if h.deletes[b] == nil {
		h.deletes[b] = map[string]interface{}{}
	}
	h.deletes[b][key] = obj
}

// pass runs f if bucket b is open and this handler has been handed its
// current opening, and says whether it did.
func (h *gatedHandler) pass(b int, f func()) bool {
	ran := false
	h.ring.gate.call(b, func() {
		if h.seen[b] == h.ring.gate.gen(b) {
			f()
			ran = true
		}
	})
	return ran
}

// OnSnapshot takes the ring's snapshots: openings, and position marks.
func (h *gatedHandler) OnSnapshot(s cache.Snapshot) {
	switch t := s.Tag.(type) {
	case *informerOpening:
		h.open(t, s.Objects)
	case positionMark:
		rv := s.ResourceVersion
		h.handled.Store(&rv)
	}
}

// open starts passing the buckets of the opening still at its
// generation, after delivering the deletes replayed for them, the
// deletes kept for them, and an add for each of objs (the cache at this
// point of the stream) in them. A replayed delete is dropped if its
// object (by uid) is in objs or among the kept deletes.
func (h *gatedHandler) open(io *informerOpening, objs []interface{}) {
	o := io.opening
	now := newSet(o.set.n)
	for _, b := range o.set.list() {
		if h.seen[b] != o.gens[b] && h.ring.gate.gen(b) == o.gens[b] {
			h.seen[b] = o.gens[b]
			now.add(b)
		}
	}
	if now.isEmpty() {
		return
	}
	kept := h.take(now)
	h.deliverReplayed(io.replayed, now, kept, objs)
	for b, kept := range kept {
		for _, obj := range kept {
			h.pass(b, func() { h.inner.OnDelete(obj) })
		}
	}
	for _, obj := range objs {
		if b, ok := h.ring.bucket(obj); ok && now.has(b) {
			h.pass(b, func() { h.inner.OnAdd(obj, false) })
		}
	}
}

// deliverReplayed hands inner the replayed deletes of the buckets of now
// whose objects are neither cached (objs) nor among the kept deletes.
func (h *gatedHandler) deliverReplayed(replayed []interface{}, now set, kept map[int]map[string]interface{}, objs []interface{}) {
	if len(replayed) == 0 {
		return
	}
	known := map[types.UID]bool{}
	for _, obj := range objs {
		known[uidOf(obj)] = true
	}
	for _, byKey := range kept {
		for _, obj := range byKey {
			known[uidOf(obj)] = true
		}
	}
	for _, obj := range replayed {
		if b, ok := h.ring.bucket(obj); ok && now.has(b) && !known[uidOf(obj)] {
			known[uidOf(obj)] = true
			h.pass(b, func() { h.inner.OnDelete(obj) })
		}
	}
}

// uidOf is the uid of obj, or of the object a tombstone holds.
func uidOf(obj interface{}) types.UID {
	if t, ok := obj.(clientgocache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if m, err := meta.Accessor(obj); err == nil {
		return m.GetUID()
	}
	return ""
}

// take removes and returns the deletes kept for the buckets of s.
func (h *gatedHandler) take(s set) map[int]map[string]interface{} {
	h.kept.Lock()
	defer h.kept.Unlock()
	out := map[int]map[string]interface{}{}
	for b, kept := range h.deletes {
		if s.has(b) {
			out[b] = kept
			delete(h.deletes, b)
		}
	}
	return out
}

// prune forgets the deletes kept for buckets no longer planned for this
// replica (those that opened are delivered by open).
func (h *gatedHandler) prune() {
	h.kept.Lock()
	defer h.kept.Unlock()
	for b := range h.deletes {
		if !h.ring.gate.planned(b) {
			delete(h.deletes, b)
		}
	}
}
