package cache

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	clientgofeatures "k8s.io/client-go/features"
	clientgocache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kreflector/cache/internal/repr"
)

// informerQueue is the queue of this package's informers: client-go's
// RealFIFO, whose transform leaves alone the objects the informer's store
// already holds when they come back through Replace. A relist hands
// Replace such held objects (see ReflectorOptions.ReuseHeldObjects); they
// went through the transform when they were first stored, and handlers
// and listers may be reading them, so transforming them again could race
// with those readers (client-go's RealFIFO notes that a transform must
// not see stored objects for that reason).
type informerQueue struct {
	*clientgocache.RealFIFO
	// replacing is set while Replace runs (the Reflector's goroutine).
	replacing atomic.Bool
	// local marks the Replaces a merged reshard makes, for the applier
	// (nil when the queue does not emit one ReplacedAll per Replace).
	local *localReplaces
	// packs says the transform packs objects into a compact store's
	// records (it passes records through, so held ones need no care).
	packs bool
}

// ReplaceLocal is Replace for a merged reshard (see localReplacer): the
// queue carries listed, and the applier adds to it what the store holds
// that keeps says stays, when it applies the ReplacedAll.
func (q *informerQueue) ReplaceLocal(listed []interface{}, resourceVersion string, keeps func(interface{}) bool) error {
	id := q.local.push(resourceVersion, len(listed), keeps)
	err := q.Replace(listed, resourceVersion)
	if err != nil {
		q.local.drop(id)
	}
	return err
}

// mergesLocally says whether the queue emits one ReplacedAll per
// Replace, which a merge needs.
func (q *informerQueue) mergesLocally() bool { return q.local != nil }

// localReplaces is the queue of a merged reshard's Replaces not yet
// applied, each known by its resourceVersion and length (and a number),
// with what decides which held objects it keeps: the applier takes one
// off for each ReplacedAll that matches the first.
type localReplaces struct {
	mu      sync.Mutex
	next    uint64
	pending []localReplace
}

type localReplace struct {
	id, n uint64
	rv    string
	keeps func(interface{}) bool
}

func (l *localReplaces) push(rv string, n int, keeps func(interface{}) bool) uint64 {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	l.pending = append(l.pending, localReplace{id: l.next, n: uint64(n), rv: rv, keeps: keeps})
	return l.next
}

func (l *localReplaces) drop(id uint64) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending = slices.DeleteFunc(l.pending, func(r localReplace) bool { return r.id == id })
}

// take returns, if the ReplacedAll of info is a merged reshard's, what
// decides which held objects it keeps (nil if it is not one).
func (l *localReplaces) take(info ReplacedAllInfo) func(interface{}) bool {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.pending) == 0 || l.pending[0].rv != info.ResourceVersion || l.pending[0].n != uint64(len(info.Objects)) {
		return nil
	}
	keeps := l.pending[0].keeps
	l.pending = l.pending[1:]
	return keeps
}

// Replace is the RealFIFO's, with held objects left untransformed.
func (q *informerQueue) Replace(list []interface{}, resourceVersion string) error {
	q.replacing.Store(true)
	defer q.replacing.Store(false)
	return q.RealFIFO.Replace(list, resourceVersion)
}

// skipHeld wraps transform so that, during Replace, an object store holds
// (the very object, not an equal one) is passed through unchanged.
func (q *informerQueue) skipHeld(store getter, transform clientgocache.TransformFunc) clientgocache.TransformFunc {
	return func(obj interface{}) (interface{}, error) {
		if q.packs {
			return transform(obj)
		}
		if q.replacing.Load() && isHeldIn(store, obj) {
			return obj, nil
		}
		return transform(obj)
	}
}

// isHeldIn says whether obj is the object store holds under its key.
func isHeldIn(store getter, obj interface{}) bool {
	old, ok, err := store.Get(obj)
	return err == nil && ok && repr.Same(old, obj)
}

// knownRecords is what a per-object RealFIFO reads the informer's store
// through (to resync it, and to find what a relist deleted): a compact
// store's records as they are, not decoded objects, so that a resync
// hands each record to the handlers (who decode it once, together) and
// puts back the very record, where a decoded object would be encoded
// again. Tombstones that carry a record are resolved at delivery, as
// the atomic queue's are.
type knownRecords struct{ clientgocache.Store }

// GetByKey returns what the store holds under key: a compact store's
// record, any other store's object.
func (k knownRecords) GetByKey(key string) (interface{}, bool, error) {
	if g, ok := k.Store.(*guardedIndexer); ok && g.compact != nil {
		if r, held := g.compact.record(key); held {
			return r, true, nil
		}
		return nil, false, nil
	}
	return k.Store.GetByKey(key)
}

// newInformerQueue returns the queue client-go's informers use with
// client-go's feature gates as they are set: a RealFIFO, atomic (one
// ReplacedAll per relist, one SyncAll per resync, Bookmark deltas, popped
// without holding its lock) unless the AtomicFIFO gate is off, in which
// case it emits per-object deltas against store. Its transform skips the
// objects store holds during Replace (see informerQueue).
func newInformerQueue(logger klog.Logger, objType any, store clientgocache.Store, transform clientgocache.TransformFunc,
	id InformerNameAndResource, metrics InformerMetricsProvider) *informerQueue {
	gates := clientgofeatures.FeatureGates()
	q := &informerQueue{}
	opts := clientgocache.RealFIFOOptions{
		Logger:          &logger,
		Name:            fmt.Sprintf("RealFIFO %T", objType),
		KeyFunction:     clientgocache.MetaNamespaceKeyFunc,
		Identifier:      id,
		MetricsProvider: metrics,
	}
	if transform != nil {
		opts.Transformer = q.skipHeld(store, transform)
	}
	atomic := gates.Enabled(clientgofeatures.AtomicFIFO)
	if atomic {
		opts.KeyFunction = batchKey
	}
	opts.KeyFunction = recordKeys(opts.KeyFunction, atomic)
	if gates.Enabled(clientgofeatures.AtomicFIFO) {
		q.local = &localReplaces{}
		opts.AtomicEvents = true
		opts.UnlockWhileProcessing = gates.Enabled(clientgofeatures.UnlockWhileProcessingFIFO)
		opts.EmitDeltaTypeBookmark = true
	} else {
		opts.KnownObjects = knownRecords{store}
	}
	q.RealFIFO = clientgocache.NewRealFIFOWithOptions(opts)
	return q
}
