package ring

import (
	clientgocache "k8s.io/client-go/tools/cache"
	"sync"
)

// gatedHandler passes the informer's calls to inner only for objects of
// buckets the gate holds open, one call at a time (the informer's calls
// and the adds delivered on acquiring alike). A delete of a bucket planned
// for this replica but not open yet is kept, and delivered when the bucket
// opens: a delete that happens during a handoff reaches the new owner.
type gatedHandler struct {
	ring  *Ring
	inner clientgocache.ResourceEventHandler

	// mu serialises the calls to inner.
	mu sync.Mutex
	// kept guards deletes, the deletes kept by bucket, then by object key;
	// taken briefly, never around a call to inner.
	kept    sync.Mutex
	deletes map[int]map[string]interface{}
}

func newGatedHandler(r *Ring, inner clientgocache.ResourceEventHandler) *gatedHandler {
	return &gatedHandler{ring: r, inner: inner, deletes: map[int]map[string]interface{}{}}
}

func (h *gatedHandler) OnAdd(obj interface{}, initial bool) {
	h.deliver(obj, func() { h.inner.OnAdd(obj, initial) })
}

func (h *gatedHandler) OnUpdate(old, obj interface{}) {
	h.deliver(obj, func() { h.inner.OnUpdate(old, obj) })
}

func (h *gatedHandler) OnDelete(obj interface{}) {
	b, ok := h.ring.bucket(obj)
	if !ok {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ring.gate.call(b, func() { h.inner.OnDelete(obj) }) || !h.ring.gate.awaits(b) {
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

func (h *gatedHandler) deliver(obj interface{}, call func()) {
	b, ok := h.ring.bucket(obj)
	if !ok {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ring.gate.call(b, call)
}

// acquired delivers, for the buckets of s that just opened, the deletes
// kept for them and then an add for each object in objs (the cache).
func (h *gatedHandler) acquired(s set, objs []interface{}) {
	h.mu.Lock()
	for b, kept := range h.take(s) {
		for _, obj := range kept {
			h.ring.gate.call(b, func() { h.inner.OnDelete(obj) })
		}
	}
	h.mu.Unlock()
	for _, obj := range objs {
		if b, ok := h.ring.bucket(obj); ok && s.has(b) {
			h.OnAdd(obj, false)
		}
	}
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
// replica (those that opened are delivered by acquired).
func (h *gatedHandler) prune() {
	h.kept.Lock()
	defer h.kept.Unlock()
	for b := range h.deletes {
		if !h.ring.gate.planned(b) {
			delete(h.deletes, b)
		}
	}
}
