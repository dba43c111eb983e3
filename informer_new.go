package cache

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	clientgocache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// NewInformerWithOptions returns a store (an Indexer when options.Indexers
// is set) and a Controller that keeps it in step with options.ListerWatcher
// through this package's Reflector, calling options.Handler for every
// change. Use the store only to read: writing to it makes the
// notifications wrong. It panics if the ListerWatcher or the Handler is nil.
// A failure of the store while the queue is applied (an index function's
// error, on which client-go's indexer panics) makes the Reflector relist
// (see ErrIndexerFailed).
func NewInformerWithOptions(options InformerOptions) (clientgocache.Store, Controller) {
	var store clientgocache.Store
	metrics := clientgocache.WithStoreMetrics(options.Identifier, options.InformerMetricsProvider)
	if options.Indexers == nil {
		store = clientgocache.NewStore(informerKeyFunc, metrics)
	} else {
		store = newGuardedIndexer(options.Indexers, metrics)
	}
	return store, newInformer(store, options, "NewInformerWithOptions")
}

// NewInformer is NewInformerWithOptions with a plain store.
//
// Deprecated: use NewInformerWithOptions, as in client-go.
func NewInformer(lw clientgocache.ListerWatcher, objType runtime.Object, resyncPeriod time.Duration, h ResourceEventHandler) (clientgocache.Store, Controller) {
	store := clientgocache.NewStore(informerKeyFunc)
	opts := InformerOptions{ListerWatcher: lw, ObjectType: objType, Handler: h, ResyncPeriod: resyncPeriod}
	return store, newInformer(store, opts, "NewInformer")
}

// NewIndexerInformer is NewInformerWithOptions with an Indexer.
//
// Deprecated: use NewInformerWithOptions, as in client-go.
func NewIndexerInformer(lw clientgocache.ListerWatcher, objType runtime.Object, resyncPeriod time.Duration, h ResourceEventHandler, indexers Indexers) (Indexer, Controller) {
	store := newGuardedIndexer(indexers)
	opts := InformerOptions{ListerWatcher: lw, ObjectType: objType, Handler: h, ResyncPeriod: resyncPeriod, Indexers: indexers}
	return store, newInformer(store, opts, "NewIndexerInformer")
}

// NewTransformingInformer is NewInformer whose objects pass through
// transformer before they are stored and handed to h.
//
// Deprecated: use NewInformerWithOptions, as in client-go.
func NewTransformingInformer(lw clientgocache.ListerWatcher, objType runtime.Object, resyncPeriod time.Duration, h ResourceEventHandler, transformer clientgocache.TransformFunc) (clientgocache.Store, Controller) {
	store := clientgocache.NewStore(informerKeyFunc)
	opts := InformerOptions{ListerWatcher: lw, ObjectType: objType, Handler: h, ResyncPeriod: resyncPeriod, Transform: transformer}
	return store, newInformer(store, opts, "NewTransformingInformer")
}

// NewTransformingIndexerInformer is NewIndexerInformer whose objects pass
// through transformer before they are stored and handed to h.
//
// Deprecated: use NewInformerWithOptions, as in client-go.
func NewTransformingIndexerInformer(lw clientgocache.ListerWatcher, objType runtime.Object, resyncPeriod time.Duration, h ResourceEventHandler, indexers Indexers, transformer clientgocache.TransformFunc) (Indexer, Controller) {
	store := newGuardedIndexer(indexers)
	opts := InformerOptions{ListerWatcher: lw, ObjectType: objType, Handler: h, ResyncPeriod: resyncPeriod, Indexers: indexers, Transform: transformer}
	return store, newInformer(store, opts, "NewTransformingIndexerInformer")
}

// newInformer returns the Controller of the NewInformer family; fn names
// the caller in the panic for a nil ListerWatcher or Handler.
func newInformer(store clientgocache.Store, options InformerOptions, fn string) Controller {
	mustBeSetIn(options.ListerWatcher, "ListerWatcher", fn)
	mustBeSetIn(options.Handler, "ResourceEventHandler", fn)
	logger := klog.Background()
	if options.Logger != nil {
		logger = *options.Logger
	}
	q := newInformerQueue(logger, options.ObjectType, store, options.Transform, options.Identifier, options.InformerMetricsProvider)
	a := deltaApplier{store: store, handler: options.Handler}
	c := New(&Config{
		Queue:            q,
		ListerWatcher:    options.ListerWatcher,
		ObjectType:       options.ObjectType,
		FullResyncPeriod: options.ResyncPeriod,
		MinWatchTimeout:  options.MinWatchTimeout,
		Process:          a.process,
		ProcessBatch:     a.processBatch,
	}).(*controller)
	c.held = store
	c.applies = true
	if g, ok := store.(*guardedIndexer); ok {
		g.reportTo(c.storeFailed)
	}
	if options.Identifier.Name() != "" {
		// Named after its identity rather than the caller of New.
		c.name = informerName(options.ObjectType, options.Identifier)
	}
	return c
}

// batchKey is the key an atomic RealFIFO files objects under. In atomic
// mode the queue uses keys only to check that an object has metadata and
// to keep two deltas of one object out of one batch (a repeated key ends
// the batch), so a coarser key than namespace/name is safe: the name, which
// costs no allocation, where MetaNamespaceKeyFunc builds a string twice per
// event. Objects of the same name in different namespaces merely end
// batches early.
func batchKey(obj interface{}) (string, error) {
	if d, ok := obj.(clientgocache.DeletedFinalStateUnknown); ok {
		return d.Key, nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", err
	}
	return m.GetName(), nil
}
