package cache

import (
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache/internal/lean"
	"github.com/kreflector/cache/internal/listhint"
)

// intake prepares objects before they reach the store, in this order:
//
//  1. For the objects of a sync (LIST pages as they arrive, after a
//     sharded Reflector's shard check; WatchList initial events), an
//     object the store already holds at the same resourceVersion is
//     replaced by the held one (see ReflectorOptions.ReuseHeldObjects),
//     so the new copy becomes garbage with its page instead of living
//     until the store's Replace; nothing else is done to a held object.
//  2. managedFields are dropped (DropManagedFields).
//  3. For the other objects of a sync, when the store holds another
//     version under the object's key, the object's strings (and unless
//     the store transforms, byte slices and string maps) equal to that
//     version's become that version's (see lean.Adopt; part of
//     ReuseHeldObjects), unless step 4 shares strings.
//  4. Equal strings are shared (ShareStrings), and equal maps
//     (ShareMaps, unless the store transforms: see storeTransforms).
//
// ADDED and MODIFIED events get steps 2 and 4, DELETED events step 2
// only: their object leaves the cache, so sharing its values would save
// nothing. A store's own transform (a TransformingStore's, an
// informer's) comes after all four, where the store applies it.
//
// The loop goroutine builds it and sets filled; a LIST's goroutine reads
// it, started after every write.
type intake struct {
	// held finds what the store holds; nil when it cannot be asked.
	held heldObjects
	// dropManagedFields is the lean option of that name; table, set
	// under ShareStrings or ShareMaps, holds the canonical copies of
	// shared values.
	dropManagedFields bool
	table             *lean.Table
	// adoptMutable says lean.Adopt may adopt byte slices and maps: the
	// store does not transform.
	adoptMutable bool
	// filled says a sync has completed, so the store may hold objects.
	// Before that nothing is looked up: the first sync finds nothing.
	filled bool
	// pack, if set, packs each object of a LIST page into a compact
	// store's record once the steps above are done (see packWith).
	pack *recordPacker
}

// newIntake returns the intake of a Reflector with options o writing to
// store, or nil when it has nothing to do.
func newIntake(o ReflectorOptions, store ReflectorStore) *intake {
	in := &intake{dropManagedFields: o.DropManagedFields, adoptMutable: !storeTransforms(store)}
	maps := o.ShareMaps && in.adoptMutable
	if (o.ShareStrings || maps) && !storesBytes(o, store) {
		in.table = lean.NewTable(o.ShareStrings, maps)
	}
	if o.ReuseHeldObjects == nil || *o.ReuseHeldObjects {
		in.held = heldIn(store)
	}
	if in.held == nil && !in.leans() {
		return nil
	}
	return in
}

// storesBytes says whether the objects end up encoded (a compact store, or
// an informer's with ReflectorOptions.Compact): sharing their values
// before they are encoded would save nothing and keep a table.
func storesBytes(o ReflectorOptions, store ReflectorStore) bool {
	_, compact := store.(*compactStore)
	return compact || o.Compact != nil
}

// dropsManagedFields says whether every object's managedFields are
// dropped (step 2) before the store or anything else reads them.
func (in *intake) dropsManagedFields() bool { return in != nil && in.dropManagedFields }

// leans says whether objects get steps 2 or 3 (see intake).
func (in *intake) leans() bool { return in.dropManagedFields || in.table != nil }

// lean applies steps 2 and 4 to obj, in place.
func (in *intake) lean(obj runtime.Object) { in.leanFrom(obj, nil) }

// leanFrom applies steps 2 to 4 to obj, in place; old, if not nil, is
// another version of obj the store holds. Adopting old's values is left
// out when strings are shared through the table, which shares them with
// every object's, old's included.
func (in *intake) leanFrom(obj runtime.Object, old interface{}) {
	in.leanDeleted(obj)
	if old != nil && (in.table == nil || !in.table.SharesStrings()) {
		lean.Adopt(obj, old, in.adoptMutable)
	}
	if in.table != nil {
		in.table.Share(obj)
	}
}

// leanDeleted applies step 2 to obj, a DELETED event's object.
func (in *intake) leanDeleted(obj runtime.Object) {
	if in.dropManagedFields {
		lean.DropManagedFields(obj)
	}
}

// watchItem is what a watch's ListWatch may run on each object where it
// decodes it, for a stream starting in mode: the lean steps of ADDED and
// MODIFIED events (DELETED events' objects get them too, which only
// spends a little work on objects leaving the cache), unless nothing is
// made lean or, for a WatchList's initial events, the store's held
// objects are looked up first (see prepare).
func (in *intake) watchItem(mode streamMode) listhint.ItemFunc {
	if in == nil || !in.leans() || (mode.gathering() && in.reusing()) {
		return nil
	}
	return in.lean
}

// synced is told that a sync of items objects completed: the store may
// hold objects from now on, and the share table's generations span at
// least that many.
func (in *intake) synced(items int) {
	in.filled = true
	if in.table != nil {
		in.table.Synced(items)
	}
}

// reusing says whether the sync about to start looks for held objects.
func (in *intake) reusing() bool { return in != nil && in.held != nil && in.filled }

// prepare returns what the store gets for obj, an object of a sync: the
// held object if reuse is on and the store holds obj's key at obj's
// resourceVersion (reused is then true), otherwise obj made lean, and
// with reuse on, its values adopted from the version the store holds
// (see leanFrom).
func (in *intake) prepare(obj runtime.Object, reuse bool) (out interface{}, reused bool) {
	var old interface{}
	if reuse {
		var same bool
		if old, same = in.heldVersion(obj); same {
			return old, true
		}
	}
	if _, isRecord := old.(*compactRecord); isRecord {
		old = nil // nothing to adopt from bytes
	}
	in.leanFrom(obj, old)
	return obj, false
}

// page prepares items, the objects of one LIST page, in place and returns
// how many are held objects; held, if not nil, marks (not nil) the items
// that are already what the store holds, which are left as they are and
// not counted.
func (in *intake) page(items []interface{}, reuse bool, held []any) int {
	n := 0
	for i, it := range items {
		obj, ok := it.(runtime.Object)
		if !ok || (held != nil && held[i] != nil) {
			continue
		}
		var reused bool
		if items[i], reused = in.prepare(obj, reuse); reused {
			n++
		}
	}
	return n
}

// heldByName is the lookup a ListWatch may make before decoding an item
// of a relist (see listhint.HeldFunc), or nil: only an informer's
// indexer is asked so, as its keys are made of namespace and name alone.
func (in *intake) heldByName() listhint.HeldFunc {
	if in == nil {
		return nil
	}
	h, ok := in.held.(heldRecords)
	if !ok {
		return nil
	}
	return func(namespace, name, rv string) (any, bool) {
		key := name
		if namespace != "" {
			key = namespace + "/" + name
		}
		old, ok := h.v.heldForRelist(key)
		if !ok || !atVersion(old, rv) {
			return nil, false
		}
		return old, true
	}
}

// countHeld is how many items held stands in for.
func countHeld(held []any) int {
	n := 0
	for _, h := range held {
		if h != nil {
			n++
		}
	}
	return n
}

// heldVersion returns what the store holds under obj's key (nil if
// nothing), and whether it stands for obj: the same non-empty
// resourceVersion, which by the API's contract means the same content.
func (in *intake) heldVersion(obj runtime.Object) (old interface{}, same bool) {
	old, ok := in.held.held(obj)
	if !ok {
		return nil, false
	}
	return old, atVersion(old, resourceVersionOf(obj))
}

// atVersion says whether obj (a record, or an object) is at the
// non-empty resourceVersion rv.
func atVersion(obj interface{}, rv string) bool {
	if r, ok := obj.(*compactRecord); ok {
		return r.sameVersion(rv)
	}
	return rv != "" && resourceVersionOf(obj) == rv
}

// resourceVersionOf is obj's resourceVersion, "" if it has no metadata.
func resourceVersionOf(obj interface{}) string {
	if r, ok := obj.(*compactRecord); ok {
		return r.resourceVersion()
	}
	if m, ok := obj.(metav1.Object); ok {
		return m.GetResourceVersion()
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

// heldObjects answers what a store holds under an object's key. It is
// called from a LIST's goroutine while the loop goroutine waits, so a
// store that is safe for concurrent reads (as every store must be) needs
// nothing more.
type heldObjects interface {
	held(obj interface{}) (interface{}, bool)
}

// getter is the lookup of client-go's Store.
type getter interface {
	Get(obj interface{}) (item interface{}, exists bool, err error)
}

// heldInStore asks a store with Get. With sameType, a held object of
// another Go type than the listed one is never the same object (a store
// that keeps something else under the key, such as a queue's deltas).
type heldInStore struct {
	store    getter
	sameType bool
}

func (h heldInStore) held(obj interface{}) (interface{}, bool) {
	old, ok, err := h.store.Get(obj)
	if err != nil || !ok || old == nil {
		return nil, false
	}
	if h.sameType && reflect.TypeOf(old) != reflect.TypeOf(obj) {
		return nil, false
	}
	return old, true
}

// heldIn returns how to ask store what it holds, or nil when it cannot be
// asked: it has no Get, it is a queue (whose Get returns queued deltas),
// or it transforms what it is given (a held object would be transformed
// again, while others may be reading it).
func heldIn(store ReflectorStore) heldObjects {
	switch store.(type) {
	case *clientgocache.DeltaFIFO, *clientgocache.RealFIFO, *informerQueue:
		return nil
	}
	if storeTransforms(store) {
		return nil
	}
	g, ok := store.(getter)
	if !ok {
		return nil
	}
	return heldInStore{store: g, sameType: true}
}

// storeTransforms says whether store may change the objects it is given
// (a transform of its own), or cannot be known not to. Maps are not
// shared for such a store: a transform that changes a map in place (drops
// an annotation, say) would change it for every object sharing it.
func storeTransforms(store ReflectorStore) bool {
	// client-go's queues (and the informers' queue, which embeds one) are
	// TransformingStores.
	if ts, ok := store.(TransformingStore); ok {
		return ts.Transformer() != nil
	}
	return clientGoStoreTransforms(store)
}

// clientGoStoreType is the type of client-go's NewStore and NewIndexer.
var clientGoStoreType = reflect.TypeOf(clientgocache.NewStore(clientgocache.MetaNamespaceKeyFunc))

// clientGoStoreTransforms says whether store is client-go's store built
// with WithTransformer, which transforms every object its Replace is
// given and does not say so (it is no TransformingStore). If the field
// cannot be found, it is taken to transform.
func clientGoStoreTransforms(store ReflectorStore) bool {
	v := reflect.ValueOf(store)
	if v.Type() != clientGoStoreType || v.IsNil() {
		return false
	}
	f := v.Elem().FieldByName("transformer")
	return !f.IsValid() || f.Kind() != reflect.Func || !f.IsNil()
}

// reuseFrom makes r look for held objects in store (unless o turns reuse
// off): the store its queue feeds, an informer's indexer, whose objects
// may have been transformed into another Go type.
func (r *Reflector) reuseFrom(store getter, o ReflectorOptions) {
	if o.ReuseHeldObjects != nil && !*o.ReuseHeldObjects {
		return
	}
	if r.in == nil {
		r.in = &intake{adoptMutable: !storeTransforms(r.store)}
	}
	r.in.held = heldInStore{store: store}
	if v, ok := store.(handlerView); ok {
		r.in.held = heldRecords{v}
	}
}

// heldRecords asks an informer's indexer, whose compact store answers
// with its records (undecoded) and other stores with their objects.
type heldRecords struct{ v handlerView }

func (h heldRecords) held(obj interface{}) (interface{}, bool) {
	key, err := informerKeyOf(obj)
	if err != nil {
		return nil, false
	}
	return h.v.heldForRelist(key)
}
