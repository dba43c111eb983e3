package cache

import (
	"errors"
	"fmt"
	"sort"

	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache/internal/repr"
)

// informerKeyFunc keys the informers' stores, as client-go's do.
var informerKeyFunc clientgocache.KeyFunc = clientgocache.DeletionHandlingMetaNamespaceKeyFunc

// deltaApplier applies popped deltas to a store and tells a handler what
// changed, with the calls client-go's informers make for the same deltas.
// It is used from the one goroutine that pops the queue.
type deltaApplier struct {
	store   clientgocache.Store
	handler ResourceEventHandler
	// replaced, if set, counts the whole-state replacements applied to
	// the store.
	replaced *replaceMark
	// position, if set, follows the resourceVersion the store has reached.
	position *storePosition
	// local, if set, tells a merged reshard's ReplacedAll from a relist's.
	local *localReplaces
}

// process is a ProcessFunc: obj must be a Deltas.
func (a deltaApplier) process(obj interface{}, isInInitialList bool) error {
	deltas, ok := obj.(Deltas)
	if !ok {
		return fmt.Errorf("popped %T, not Deltas", obj)
	}
	for _, d := range deltas {
		if err := a.apply(d, isInInitialList); err != nil {
			return err
		}
	}
	return nil
}

// processBatch is a ProcessBatchFunc: it applies every delta, in order,
// and returns every failure joined.
func (a deltaApplier) processBatch(deltas []Delta, isInInitialList bool) error {
	var errs []error
	for _, d := range deltas {
		if err := a.apply(d, isInInitialList); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// apply applies one delta and moves the store's position past it.
func (a deltaApplier) apply(d Delta, isInInitialList bool) error {
	if err := a.applyOne(d, isInInitialList); err != nil {
		return err
	}
	a.position.advance(d)
	return nil
}

// applyOne applies one delta. Upserts become OnAdd or OnUpdate depending
// on whether the store held the object; a SyncAll becomes OnUpdate(o, o)
// for every stored object; a Bookmark only moves the store's
// resourceVersion.
func (a deltaApplier) applyOne(d Delta, isInInitialList bool) error {
	switch d.Type {
	case Added, Updated, Replaced, Sync:
		return a.upsert(d.Object, isInInitialList)
	case Deleted:
		if err := a.store.Delete(d.Object); err != nil {
			return err
		}
		a.handler.OnDelete(d.Object)
		return nil
	case ReplacedAll:
		info, ok := d.Object.(ReplacedAllInfo)
		if !ok {
			return fmt.Errorf("ReplacedAll delta carries %T, not ReplacedAllInfo", d.Object)
		}
		return a.replaceAll(info, isInInitialList)
	case SyncAll:
		for _, o := range a.allHeld() {
			a.handler.OnUpdate(o, o)
		}
		return nil
	case Bookmark:
		info, ok := d.Object.(BookmarkInfo)
		if !ok {
			return fmt.Errorf("Bookmark delta carries %T, not BookmarkInfo", d.Object)
		}
		a.store.Bookmark(info.ResourceVersion)
		return nil
	}
	return fmt.Errorf("unknown delta type %q", d.Type)
}

func (a deltaApplier) upsert(obj interface{}, isInInitialList bool) error {
	old, exists, err := a.held(obj)
	if err == nil && exists {
		if err := a.store.Update(obj); err != nil {
			return err
		}
		a.handler.OnUpdate(old, obj)
		return nil
	}
	if err := a.store.Add(obj); err != nil {
		return err
	}
	a.handler.OnAdd(obj, isInInitialList)
	return nil
}

// replaceAll makes the store hold exactly info.Objects, then tells the
// handler: first OnDelete with a DeletedFinalStateUnknown for every stored
// object missing from the list (sorted by key; client-go's order is the
// store's map order), then, in list order, OnUpdate(old, new) for objects
// the store held and OnAdd for the others. A merged reshard's Replace
// (see localReplacer) carries the objects of the ranges it added: what
// the store holds now (after every change queued before it) that the new
// shard keeps is kept, and notifies nothing, since it did not change.
func (a deltaApplier) replaceAll(info ReplacedAllInfo, isInInitialList bool) error {
	keeps := a.local.take(info)
	local := keeps != nil
	if local {
		info.Objects = append(a.heldWhere(keeps), info.Objects...)
	}
	olds, gone, err := a.replaceStore(info)
	if err != nil {
		return err
	}
	a.replaced.add()
	for _, t := range gone {
		a.handler.OnDelete(t)
	}
	kind := func(i int) batchKind {
		switch {
		case olds[i] == nil:
			return batchAdd
		case local && repr.Same(olds[i], info.Objects[i]):
			// Kept by a merged reshard as it was: nothing happened to it.
			return batchSkip
		case sameResourceVersion(olds[i], info.Objects[i]):
			return batchSame
		}
		return batchChanged
	}
	if q, ok := a.handler.(batchQueuer); ok {
		q.queueBatch(newReplaceBatch(info.Objects, olds, isInInitialList, kind))
		return nil
	}
	for i, o := range info.Objects {
		switch kind(i) {
		case batchAdd:
			a.handler.OnAdd(o, isInInitialList)
		case batchChanged, batchSame:
			a.handler.OnUpdate(olds[i], o)
		}
	}
	return nil
}

// batchQueuer is a handler that takes a ReplacedAll's adds and updates as
// one batch (a shared informer's listeners: see replaceBatch).
type batchQueuer interface {
	queueBatch(b *replaceBatch)
}

// replaceStore makes the store hold info's objects and returns, for each,
// what it held under its key before (nil: nothing), and tombstones,
// sorted by key, for what it held under keys info lacks. A compact store
// finds these in the pass that replaces (handlerView); any other store
// is read by key before its Replace.
func (a deltaApplier) replaceStore(info ReplacedAllInfo) ([]interface{}, []clientgocache.DeletedFinalStateUnknown, error) {
	if v, ok := a.store.(handlerView); ok {
		if olds, gone, done, err := v.replaceForHandlers(info.Objects, info.ResourceVersion); done {
			return olds, gone, err
		}
	}
	keys := make([]string, len(info.Objects))
	listed := make(map[string]struct{}, len(info.Objects))
	for i, o := range info.Objects {
		k, err := informerKeyOf(o)
		if err != nil {
			return nil, nil, clientgocache.KeyError{Obj: o, Err: err}
		}
		keys[i] = k
		listed[k] = struct{}{}
	}
	gone := a.missing(listed)
	olds := make([]interface{}, len(info.Objects))
	for i, k := range keys {
		if old, exists := a.heldByKey(k); exists {
			olds[i] = old
		}
	}
	return olds, gone, a.store.Replace(info.Objects, info.ResourceVersion)
}

// held returns what the store holds under obj's key, as handlers are to
// get it (a compact store's record: see handlerView).
func (a deltaApplier) held(obj interface{}) (interface{}, bool, error) {
	if _, ok := a.store.(handlerView); !ok {
		return a.store.Get(obj)
	}
	key, err := informerKeyOf(obj)
	if err != nil {
		return nil, false, err
	}
	old, ok := a.heldByKey(key)
	return old, ok, nil
}

// heldByKey is held by key.
func (a deltaApplier) heldByKey(key string) (interface{}, bool) {
	if v, ok := a.store.(handlerView); ok {
		return v.heldForHandlers(key)
	}
	old, ok, err := a.store.GetByKey(key)
	return old, ok && err == nil
}

// heldWhere is every held object that keeps says stays, as handlers are
// to get them.
func (a deltaApplier) heldWhere(keeps func(interface{}) bool) []interface{} {
	var kept []interface{}
	for _, o := range a.allHeld() {
		if keeps(o) {
			kept = append(kept, o)
		}
	}
	return kept
}

// allHeld is every held object, as handlers are to get them.
func (a deltaApplier) allHeld() []interface{} {
	if v, ok := a.store.(handlerView); ok {
		return v.allForHandlers()
	}
	return a.store.List()
}

// informerKeyOf is obj's key in an informer's store (a record carries
// its own).
func informerKeyOf(obj interface{}) (string, error) {
	if r, ok := obj.(*compactRecord); ok {
		return r.key, nil
	}
	return informerKeyFunc(obj)
}

// missing returns tombstones, sorted by key, for the stored objects whose
// keys are not in listed.
func (a deltaApplier) missing(listed map[string]struct{}) []clientgocache.DeletedFinalStateUnknown {
	var gone []clientgocache.DeletedFinalStateUnknown
	for _, k := range a.store.ListKeys() {
		if _, ok := listed[k]; ok {
			continue
		}
		old, _ := a.heldByKey(k)
		gone = append(gone, clientgocache.DeletedFinalStateUnknown{Key: k, Obj: old})
	}
	sort.Slice(gone, func(i, j int) bool { return gone[i].Key < gone[j].Key })
	return gone
}
