package ring

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
)

// positions are resourceVersions by informer type (see typeKey): how far
// a member's handlers have been handed each type's changes, or from where
// a replica's cache of a bucket is complete. kube-apiserver's
// resourceVersions are integers that order the changes of a type
// (KEP-5504); a position that is not one is left out.
type positions map[string]uint64

// typeKey names the type an informer caches, the same on every replica:
// the example object's group/version/kind if it carries one, otherwise
// its Go type with its package path.
func typeKey(obj runtime.Object) string {
	if obj == nil {
		return "<nil>"
	}
	if gvk := obj.GetObjectKind().GroupVersionKind(); !gvk.Empty() {
		return gvk.GroupVersion().String() + "/" + gvk.Kind
	}
	t := reflect.TypeOf(obj)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath() + "." + t.Name()
}

// parseRV reads a resourceVersion as kube-apiserver writes it.
func parseRV(rv string) (uint64, bool) {
	n, err := strconv.ParseUint(rv, 10, 64)
	return n, err == nil && n > 0
}

// lower lowers p's position of key to rv (or sets it).
func (p positions) lower(key string, rv uint64) {
	if old, ok := p[key]; !ok || rv < old {
		p[key] = rv
	}
}

// encode writes p as "type=rv" pairs, sorted, separated by spaces (type
// keys hold no space): the form kept in AnnotationHandled.
func (p positions) encode() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(p)) {
		parts = append(parts, k+"="+strconv.FormatUint(p[k], 10))
	}
	return strings.Join(parts, " ")
}

// decodePositions reads what encode wrote.
func decodePositions(text string) (positions, error) {
	p := positions{}
	for _, part := range strings.Fields(text) {
		i := strings.LastIndexByte(part, '=')
		if i <= 0 {
			return nil, fmt.Errorf("position %q: want type=resourceVersion", part)
		}
		rv, ok := parseRV(part[i+1:])
		if !ok {
			return nil, fmt.Errorf("position %q: the resourceVersion is not a positive integer", part)
		}
		p[part[:i]] = rv
	}
	return p, nil
}

// holder is what this replica knows of the last other member seen
// holding a bucket.
type holder struct {
	name string
	// handled are the positions it published.
	handled positions
	// released is set once it let the bucket go while live, with its
	// informers running: it handled the bucket until this replica's cache
	// held it, so nothing needs replaying.
	released bool
}

// noteHolders records, for each bucket another member of v holds, that
// member and the positions it publishes (where a replay of the bucket
// would start if this replica takes it over), and notes the buckets such
// a member has since released while live.
func (st *state) noteHolders(v view, me string) {
	for _, ms := range [][]member{v.live, v.gone} {
		for _, m := range ms {
			if m.name == me {
				continue
			}
			for _, b := range m.held.list() {
				st.from[b] = &holder{name: m.name, handled: m.handled}
			}
		}
	}
	for _, m := range v.live {
		for b, h := range st.from {
			if h.name == m.name && !m.held.has(b) {
				h.released = h.released || !m.stopped
				h.handled = m.handled
			}
		}
	}
}

// replays returns what must be replayed before the buckets of open are
// handed to handlers: for each type, the deletes since the position the
// bucket's last holder published, unless it released the bucket while
// live and handling (a graceful handoff: it handled the bucket until this
// replica's cache held it, and the deletes since are kept). Otherwise it
// stopped handling before this replica started caching the bucket (it
// died, was cut off or paused until its Lease expired, or its informers
// stopped first), so the gap between is replayed. It forgets the holders
// of open.
func (st *state) replays(open set) []replayReq {
	byStart := map[string]*replayReq{}
	var out []*replayReq
	for _, b := range open.list() {
		h := st.from[b]
		delete(st.from, b)
		if h == nil || h.released {
			continue
		}
		for key, rv := range h.handled {
			id := fmt.Sprintf("%s@%d", key, rv)
			if byStart[id] == nil {
				byStart[id] = &replayReq{key: key, from: rv, buckets: newSet(open.n)}
				out = append(out, byStart[id])
			}
			byStart[id].buckets.add(b)
		}
	}
	reqs := make([]replayReq, len(out))
	for i, r := range out {
		reqs[i] = *r
	}
	return reqs
}
