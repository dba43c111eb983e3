package cachetest

import (
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// version is one revision of an object; obj is nil for a deletion. Stored
// objects are never mutated: a change stores a new object.
type version struct {
	rv  uint64
	obj runtime.Object
}

// change is one entry of the global history.
type change struct {
	rv       uint64
	resource string
	key      string
	typ      watch.EventType
	// obj is the new state; for a deletion, the last state stamped with
	// the deletion's resourceVersion.
	obj runtime.Object
	// prev is the state before the change; nil for a creation.
	prev runtime.Object
}

// keyed is an object with its store key ("namespace/name", or "name").
type keyed struct {
	key string
	obj runtime.Object
}

// history is a multi-version store in the manner of etcd: one revision
// counter for every resource, every version of every object since the
// compaction point, and the log of changes after it. State at any
// revision from the compaction point on can be read back. The Server's
// mutex guards it.
type history struct {
	rev uint64
	// compacted is the compaction point: reads at revisions below it, and
	// watches from them, are no longer possible.
	compacted uint64
	// objects maps resource, then key, to versions, oldest first.
	objects map[string]map[string][]version
	// log holds the changes after compacted, in revision order.
	log []change
	// limit, if positive, is how many changes the log keeps before older
	// ones are compacted away.
	limit int
}

func newHistory(limit int) *history {
	return &history{objects: map[string]map[string][]version{}, limit: limit}
}

// at returns the object stored under key at revision rev, or nil.
func (h *history) at(resource, key string, rev uint64) runtime.Object {
	vs := h.objects[resource][key]
	i := sort.Search(len(vs), func(i int) bool { return vs[i].rv > rev })
	if i == 0 {
		return nil
	}
	return vs[i-1].obj
}

// current returns the newest object stored under key, or nil.
func (h *history) current(resource, key string) runtime.Object {
	return h.at(resource, key, h.rev)
}

// snapshot returns the objects of resource at revision rev, in key order.
func (h *history) snapshot(resource string, rev uint64) []keyed {
	byKey := h.objects[resource]
	out := make([]keyed, 0, len(byKey))
	for key := range byKey {
		if obj := h.at(resource, key, rev); obj != nil {
			out = append(out, keyed{key: key, obj: obj})
		}
	}
	slices.SortFunc(out, func(a, b keyed) int {
		switch {
		case a.key < b.key:
			return -1
		case a.key > b.key:
			return 1
		}
		return 0
	})
	return out
}

// record appends c, whose rv must be h.rev+1, and compacts the log down to
// its limit.
func (h *history) record(c change) {
	h.rev = c.rv
	byKey := h.objects[c.resource]
	if byKey == nil {
		byKey = map[string][]version{}
		h.objects[c.resource] = byKey
	}
	v := version{rv: c.rv, obj: c.obj}
	if c.typ == watch.Deleted {
		v.obj = nil
	}
	byKey[c.key] = append(byKey[c.key], v)
	h.log = append(h.log, c)
	if h.limit > 0 && len(h.log) > h.limit {
		h.compact(h.log[len(h.log)-h.limit-1].rv)
	}
}

// since returns the changes after revision rev, oldest first. The slice
// must not be modified.
func (h *history) since(rev uint64) []change {
	i := sort.Search(len(h.log), func(i int) bool { return h.log[i].rv > rev })
	return h.log[i:]
}

// compact forgets everything that is not needed to read state at
// revisions from rev on. Every version that can be dropped belongs to a key
// with a change in the part of the log being dropped, so only those keys
// are visited.
func (h *history) compact(rev uint64) {
	if rev <= h.compacted {
		return
	}
	rev = min(rev, h.rev)
	drop := sort.Search(len(h.log), func(i int) bool { return h.log[i].rv > rev })
	for _, c := range h.log[:drop] {
		h.trim(c.resource, c.key, rev)
	}
	clear(h.log[:drop]) // release the objects; append reallocates in time
	h.log = h.log[drop:]
	h.compacted = rev
}

// trim keeps, of key's versions up to rev, only the newest, and drops it
// too if it is a deletion.
func (h *history) trim(resource, key string, rev uint64) {
	byKey := h.objects[resource]
	vs := byKey[key]
	i := sort.Search(len(vs), func(i int) bool { return vs[i].rv > rev })
	if i == 0 {
		return
	}
	keep := i - 1
	if vs[keep].obj == nil {
		keep = i
	}
	clear(vs[:keep])
	vs = vs[keep:]
	if len(vs) == 0 {
		delete(byKey, key)
		return
	}
	byKey[key] = vs
}
