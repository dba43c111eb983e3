package cache

import (
	"fmt"
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
	if gates.Enabled(clientgofeatures.AtomicFIFO) {
		opts.KeyFunction = batchKey
		opts.AtomicEvents = true
		opts.UnlockWhileProcessing = gates.Enabled(clientgofeatures.UnlockWhileProcessingFIFO)
		opts.EmitDeltaTypeBookmark = true
	} else {
		opts.KnownObjects = store
	}
	q.RealFIFO = clientgocache.NewRealFIFOWithOptions(opts)
	return q
}
