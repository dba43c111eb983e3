package cache

import (
	"errors"
	"fmt"
	"math"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kreflector/cache/internal/listhint"
	"github.com/kreflector/cache/shard"
)

// ErrShardIgnored is wrapped by the error of a sharded Reflector (see
// ReflectorOptions.Shard) whose server did not apply the shard selector: a
// LIST answered without ListMeta.ShardInfo or echoing another selector, or
// an object from a LIST, WatchList or watch that hashes outside the shard.
// By default no such data reaches the store; Health is Degraded with
// ReasonShardIgnored and WaitForSync's error wraps this one.
var ErrShardIgnored = errors.New("the server ignored the shard selector")

// IsShardIgnored says whether err wraps ErrShardIgnored.
func IsShardIgnored(err error) bool { return errors.Is(err, ErrShardIgnored) }

// howToFix ends every ErrShardIgnored error.
const howToFix = "kube-apiserver 1.36 or later with the ShardedListAndWatch feature gate applies it; " +
	"or set ReflectorOptions.ShardFilterLocally to filter on the client at full network and decode cost"

// shardSpec is what a sharded Reflector checks responses against, fixed
// for one cycle.
type shardSpec struct {
	shard    Shard
	selector string
	local    bool
	// trustAfter is how many objects in a row a watch stream must show in
	// the shard before the rest of it goes unchecked (0: never checked,
	// the shard is the whole space; -1: always checked).
	trustAfter int
}

// newShardSpec returns the spec for s, or nil for the zero Shard.
func newShardSpec(s Shard, local bool) *shardSpec {
	if s.IsZero() {
		return nil
	}
	return &shardSpec{shard: s, selector: s.String(), local: local, trustAfter: trustAfter(s.Fraction(), local)}
}

// trustAfter: a server applies a selector to a whole response stream or
// not at all, so once a stream has shown enough objects in a row in the
// shard, it is one that applies it. A server ignoring the selector sends an
// object in the shard with probability p (its share of the hash space):
// after k in a row the chance that it was ignoring it all along is p^k,
// held below one in a billion. Filtering locally checks everything.
func trustAfter(p float64, local bool) int {
	switch {
	case local:
		return -1
	case p >= 1:
		return 0
	}
	return int(min(math.Ceil(math.Log(1e-9)/math.Log(p)), 1<<20))
}

// shardCheck checks one response stream (one LIST call, one watch) against
// a spec. It belongs to the goroutine reading that stream.
type shardCheck struct {
	spec *shardSpec
	// inShard counts the stream's objects in the shard so far.
	inShard int
	// dropped counts objects left out (filtering locally).
	dropped int
	// ignored is set once a LIST page came without the selector's echo
	// and was accepted, filtering locally.
	ignored bool
}

// newCheck returns a check for one stream, or nil when spec is nil.
func (spec *shardSpec) newCheck() *shardCheck {
	if spec == nil {
		return nil
	}
	return &shardCheck{spec: spec}
}

// page checks a LIST page's ShardInfo echo. Filtering locally, a missing
// echo is accepted (the items are then filtered); another selector never
// is (a ListerWatcher that sets its own would lose objects). An
// unstructured list without one is accepted too: kube-apiserver 1.37 sets
// no ShardInfo on the lists of custom resources, so there the items, each
// checked, are the proof.
func (c *shardCheck) page(page runtime.Object, m metav1.ListInterface) error {
	info := shardInfoOf(page, m)
	_, unstructuredList := page.(*unstructured.UnstructuredList)
	switch {
	case info == nil && (c.spec.local || unstructuredList):
		c.ignored = c.ignored || !unstructuredList
		return nil
	case info == nil:
		return fmt.Errorf("%w: the LIST response carries no shardInfo; %s", ErrShardIgnored, howToFix)
	case info.Selector != c.spec.selector:
		return fmt.Errorf("%w: the server applied shard selector %q, not the Reflector's %q; does the ListerWatcher set its own ShardSelector?", ErrShardIgnored, info.Selector, c.spec.selector)
	}
	return nil
}

// shardInfoOf is the ShardInfo of a LIST page, typed (m is its ListMeta)
// or unstructured; nil when it has none.
func shardInfoOf(page runtime.Object, m metav1.ListInterface) *metav1.ShardInfo {
	if s, ok := m.(metav1.ShardedListInterface); ok {
		return s.GetShardInfo()
	}
	u, ok := page.(*unstructured.UnstructuredList)
	if !ok {
		return nil
	}
	sel, found, err := unstructured.NestedString(u.Object, "metadata", "shardInfo", "selector")
	if !found || err != nil {
		return nil
	}
	return &metav1.ShardInfo{Selector: sel}
}

// items checks items[from:] of a LIST and returns them, without those
// outside the shard when filtering locally. held, if set, is the page's
// stand-ins (see pager.heldFunc), by position from from: an item that
// stands for a held object was checked as the lookup answered (see
// shardSpec.heldIn) and is kept; held is returned filtered as the items
// are.
func (c *shardCheck) items(items []interface{}, from int, held []any) ([]interface{}, []any, error) {
	kept, keptHeld := items[:from], held[:0]
	for i, it := range items[from:] {
		var h any
		if held != nil {
			h = held[i]
		}
		keep := true
		if h != nil {
			c.inShard++
		} else {
			var err error
			if keep, err = c.object(it.(runtime.Object)); err != nil {
				return items, held, err
			}
		}
		if keep {
			kept = append(kept, it)
			if held != nil {
				keptHeld = append(keptHeld, h)
			}
		}
	}
	clear(items[len(kept):])
	return kept, keptHeld, nil
}

// standIn counts a WatchList's initial event that stands for a held
// object, checked as the lookup answered (see shardSpec.heldIn), as an
// object in the shard.
func (c *shardCheck) standIn() { c.inShard++ }

// heldIn is f, a relist's lookup of the objects the store holds, for a
// sharded Reflector: it answers only for a held object the shard
// contains. The object a server sends at a resourceVersion is the one
// held, so its item is then in the shard as surely as a check of the
// decoded item would find. By namespace, the hash is the namespace's;
// by UID, the held object's UID's (a compact store's record keeps it
// hashed). A held object with no UID (a transform may have cleared it:
// its hash would then not be the listed object's) is not answered for:
// its item is decoded and checked.
func (spec *shardSpec) heldIn(f listhint.HeldFunc) listhint.HeldFunc {
	if f == nil {
		return nil
	}
	key := spec.shard.Key()
	return func(namespace, name, rv string) (any, bool) {
		obj, ok := f(namespace, name, rv)
		if !ok {
			return nil, false
		}
		var h uint64
		if key == ShardByNamespace {
			h = key.Hash(namespaceOnly{ns: namespace})
		} else if h = heldUIDHash(obj); h == 0 {
			return nil, false
		}
		if !spec.shard.ContainsHash(h) {
			return nil, false
		}
		return obj, true
	}
}

// heldUIDHash is the hash of a held object's UID (a record's, as packed),
// 0 if it has none.
func heldUIDHash(obj any) uint64 {
	if r, ok := obj.(*compactRecord); ok {
		return r.uid
	}
	return uidHash(obj)
}

// uidHash is the hash of obj's UID as a shard by UID computes it, 0 if
// obj has no metadata or no UID. (A UID whose hash is 0, one in 2^64, is
// taken for none: its item is then decoded, never misplaced.)
func uidHash(obj any) uint64 {
	m, err := meta.Accessor(obj)
	if err != nil || m.GetUID() == "" {
		return 0
	}
	return shard.ByUID.Hash(m)
}

// namespaceOnly is the metadata ShardByNamespace hashes: a namespace.
// It has only what ShardKey.Hash reads (GetNamespace, GetUID); any other
// method would call the nil it embeds.
type namespaceOnly struct {
	metav1.Object
	ns string
}

func (n namespaceOnly) GetNamespace() string { return n.ns }
func (n namespaceOnly) GetUID() types.UID    { return "" }

// object says whether obj, a LIST item, goes on to the store. Outside the
// shard it is an ErrShardIgnored error, or, filtering locally, dropped.
func (c *shardCheck) object(obj runtime.Object) (bool, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrUnexpectedObject, err)
	}
	return c.hashed(m, obj)
}

// event is object for the object of a watch event, m its metadata: once
// the stream has shown enough objects in a row in the shard (see
// trustAfter), the rest of it goes unchecked.
func (c *shardCheck) event(m metav1.Object, obj runtime.Object) (bool, error) {
	if c.spec.trustAfter >= 0 && c.inShard >= c.spec.trustAfter {
		return true, nil
	}
	return c.hashed(m, obj)
}

// hashed decides for m, the metadata of obj.
func (c *shardCheck) hashed(m metav1.Object, obj runtime.Object) (bool, error) {
	h := c.spec.shard.Key().Hash(m)
	switch {
	case c.spec.shard.ContainsHash(h):
		c.inShard++
		return true, nil
	case c.spec.local:
		c.dropped++
		return false, nil
	}
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if kind == "" {
		kind = fmt.Sprintf("%T", obj)
	}
	return false, fmt.Errorf("%w: %s %s (uid %s) hashes to %#016x, outside %s; %s",
		ErrShardIgnored, kind, objectName(m), m.GetUID(), h, c.spec.selector, howToFix)
}

func objectName(m metav1.Object) string {
	if m.GetNamespace() == "" {
		return m.GetName()
	}
	return m.GetNamespace() + "/" + m.GetName()
}
