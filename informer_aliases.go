package cache

import (
	clientgocache "k8s.io/client-go/tools/cache"
)

// The informer layer speaks client-go's types: every name below is an alias
// (not a look-alike), so a handler, an indexer, a registration or an
// informer built here is accepted wherever client-go's, controller-runtime's
// or a generated factory's code expects client-go's, and the other way
// round.

// Event handlers.
type (
	// ResourceEventHandler receives an informer's notifications.
	ResourceEventHandler = clientgocache.ResourceEventHandler
	// ResourceEventHandlerFuncs adapts three optional functions to a
	// ResourceEventHandler (its AddFunc does not see isInInitialList).
	ResourceEventHandlerFuncs = clientgocache.ResourceEventHandlerFuncs
	// ResourceEventHandlerDetailedFuncs is ResourceEventHandlerFuncs whose
	// AddFunc also receives isInInitialList.
	ResourceEventHandlerDetailedFuncs = clientgocache.ResourceEventHandlerDetailedFuncs
	// FilteringResourceEventHandler passes on only the events of objects a
	// filter accepts, turning updates that cross the filter into adds or
	// deletes.
	FilteringResourceEventHandler = clientgocache.FilteringResourceEventHandler
	// ResourceEventHandlerRegistration is what adding a handler returns:
	// give it back to RemoveEventHandler, or ask it whether the handler has
	// seen the initial list.
	ResourceEventHandlerRegistration = clientgocache.ResourceEventHandlerRegistration
	// HandlerOptions are the optional settings of AddEventHandlerWithOptions.
	HandlerOptions = clientgocache.HandlerOptions
)

// Informers and controllers.
type (
	// SharedInformer is client-go's shared informer interface.
	SharedInformer = clientgocache.SharedInformer
	// SharedIndexInformer is SharedInformer with indexes.
	SharedIndexInformer = clientgocache.SharedIndexInformer
	// SharedIndexInformerOptions configures NewSharedIndexInformerWithOptions.
	SharedIndexInformerOptions = clientgocache.SharedIndexInformerOptions
	// InformerSynced reports whether an informer has synced.
	InformerSynced = clientgocache.InformerSynced
	// DoneChecker is a named channel that closes when something is done.
	DoneChecker = clientgocache.DoneChecker
	// Controller is the low-level list-watch-process loop built by New.
	Controller = clientgocache.Controller
	// Config configures New.
	Config = clientgocache.Config
	// InformerOptions configures NewInformerWithOptions.
	InformerOptions = clientgocache.InformerOptions
	// ProcessFunc processes one popped Deltas.
	ProcessFunc = clientgocache.ProcessFunc
	// ProcessBatchFunc processes a batch of popped deltas of distinct objects.
	ProcessBatchFunc = clientgocache.ProcessBatchFunc
	// ShouldResyncFunc is asked at each resync period whether to resync.
	ShouldResyncFunc = clientgocache.ShouldResyncFunc
	// InformerNameAndResource identifies an informer in client-go's metrics.
	InformerNameAndResource = clientgocache.InformerNameAndResource
	// InformerMetricsProvider creates client-go's informer metrics.
	InformerMetricsProvider = clientgocache.InformerMetricsProvider
)

// Indexers.
type (
	// Indexer is a Store with indexes.
	Indexer = clientgocache.Indexer
	// Indexers maps index names to index functions.
	Indexers = clientgocache.Indexers
	// IndexFunc computes the index values of an object.
	IndexFunc = clientgocache.IndexFunc
	// Indices maps index names to indexes.
	Indices = clientgocache.Indices
)

// Queues and deltas.
type (
	// Queue is what a Controller pops: client-go's DeltaFIFO or RealFIFO.
	Queue = clientgocache.Queue
	// QueueWithBatch is a Queue that can pop several deltas at once.
	QueueWithBatch = clientgocache.QueueWithBatch
	// PopProcessFunc processes what a Queue pops.
	PopProcessFunc = clientgocache.PopProcessFunc
	// Delta is one change to one object (or, for the atomic types, to all).
	Delta = clientgocache.Delta
	// Deltas is the changes to one object, oldest first.
	Deltas = clientgocache.Deltas
	// DeltaType says what kind of change a Delta is.
	DeltaType = clientgocache.DeltaType
	// ReplacedAllInfo is the Object of a ReplacedAll delta.
	ReplacedAllInfo = clientgocache.ReplacedAllInfo
	// SyncAllInfo is the Object of a SyncAll delta.
	SyncAllInfo = clientgocache.SyncAllInfo
	// BookmarkInfo is the Object of a Bookmark delta.
	BookmarkInfo = clientgocache.BookmarkInfo
)

// The delta types, with client-go's values.
const (
	Added       = clientgocache.Added
	Updated     = clientgocache.Updated
	Deleted     = clientgocache.Deleted
	Replaced    = clientgocache.Replaced
	ReplacedAll = clientgocache.ReplacedAll
	Sync        = clientgocache.Sync
	SyncAll     = clientgocache.SyncAll
	Bookmark    = clientgocache.Bookmark
)

// NamespaceIndex is the conventional name of the index by namespace.
const NamespaceIndex = clientgocache.NamespaceIndex

// ErrFIFOClosed is returned by a closed Queue's Pop.
var ErrFIFOClosed = clientgocache.ErrFIFOClosed

// NewIndexer returns client-go's thread-safe Indexer keyed by keyFunc,
// built with client-go's store options (WithTransformer, WithStoreMetrics).
func NewIndexer(keyFunc KeyFunc, indexers Indexers, opts ...StoreOption) Indexer {
	return clientgocache.NewIndexer(keyFunc, indexers, opts...)
}

// MetaNamespaceIndexFunc indexes an object by its namespace.
func MetaNamespaceIndexFunc(obj interface{}) ([]string, error) {
	return clientgocache.MetaNamespaceIndexFunc(obj)
}

// WaitForCacheSync polls the given functions until all report true (true)
// or stopCh closes (false). It is client-go's.
func WaitForCacheSync(stopCh <-chan struct{}, cacheSyncs ...InformerSynced) bool {
	return clientgocache.WaitForCacheSync(stopCh, cacheSyncs...)
}

// WaitForNamedCacheSync is WaitForCacheSync that logs, under
// controllerName, that it waits and how the wait ended. It is client-go's.
func WaitForNamedCacheSync(controllerName string, stopCh <-chan struct{}, cacheSyncs ...InformerSynced) bool {
	return clientgocache.WaitForNamedCacheSync(controllerName, stopCh, cacheSyncs...)
}

// ShutDownEventHandler removes a handler and waits until it has returned
// from its last call. It must not be called from inside the handler.
func ShutDownEventHandler(informer SharedInformer, handle ResourceEventHandlerRegistration) error {
	return clientgocache.ShutDownEventHandler(informer, handle)
}

// InformerName is client-go's process-wide unique informer name, which
// enables client-go's informer metrics for the resources registered under
// it (SharedIndexInformerOptions.Identifier); our informers honour it as
// client-go's do.
type InformerName = clientgocache.InformerName

// NewInformerName is client-go's NewInformerName: an error if name is empty
// or already taken in this process.
func NewInformerName(name string) (*InformerName, error) { return clientgocache.NewInformerName(name) }

// ResetInformerNamesForTesting is client-go's function of that name: it
// releases every InformerName, for tests.
func ResetInformerNamesForTesting() { clientgocache.ResetInformerNamesForTesting() }

// SetInformerMetricsProvider is client-go's SetInformerMetricsProvider: the
// process-wide provider of client-go's queue and store metrics, used by
// informers whose options name none. Our informers queue and store through
// client-go's, so it serves them as it serves client-go's.
func SetInformerMetricsProvider(metricsProvider InformerMetricsProvider) {
	clientgocache.SetInformerMetricsProvider(metricsProvider)
}

// client-go's type-safe informer layer, unchanged: generic aliases of
// client-go's types, so a typed handler or indexer written for client-go is
// one for ours. NewTypedSharedIndexInformer wraps any SharedIndexInformer,
// ours included; the wrapper is client-go's.

type (
	// Object is what the typed layer needs of an object: comparable, with a
	// name and a namespace.
	Object = clientgocache.Object
	// DeletedObject is what a typed handler's OnDelete receives: the
	// deleted object if known, and its key in every case.
	DeletedObject[T Object] = clientgocache.DeletedObject[T]
	// TypedResourceEventHandler is ResourceEventHandler over T.
	TypedResourceEventHandler[T Object] = clientgocache.TypedResourceEventHandler[T]
	// TypedResourceEventHandlerFuncs adapts optional functions to a
	// TypedResourceEventHandler.
	TypedResourceEventHandlerFuncs[T Object] = clientgocache.TypedResourceEventHandlerFuncs[T]
	// TypedResourceEventHandlerDetailedFuncs is
	// TypedResourceEventHandlerFuncs whose OnAdd also receives
	// isInInitialList.
	TypedResourceEventHandlerDetailedFuncs[T Object] = clientgocache.TypedResourceEventHandlerDetailedFuncs[T]
	// TypedFilteringResourceEventHandler is FilteringResourceEventHandler
	// over T.
	TypedFilteringResourceEventHandler[T Object] = clientgocache.TypedFilteringResourceEventHandler[T]
	// TypedSharedIndexInformer is SharedIndexInformer with typed handlers
	// and indexes.
	TypedSharedIndexInformer[T Object] = clientgocache.TypedSharedIndexInformer[T]
	// TypedIndexer is Indexer over T.
	TypedIndexer[T any] = clientgocache.TypedIndexer[T]
	// TypedIndexFunc is IndexFunc over T.
	TypedIndexFunc[T any] = clientgocache.TypedIndexFunc[T]
	// TypedIndexers maps index names to TypedIndexFuncs.
	TypedIndexers[T any] = clientgocache.TypedIndexers[T]
)

// NewTypedSharedIndexInformer is client-go's NewTypedSharedIndexInformer:
// informer, ours or client-go's, seen through T.
func NewTypedSharedIndexInformer[T Object](informer SharedIndexInformer) TypedSharedIndexInformer[T] {
	return clientgocache.NewTypedSharedIndexInformer[T](informer)
}

// TypedIndexerFuncToIndexerFunc is client-go's function of that name.
func TypedIndexerFuncToIndexerFunc[T any](indexer TypedIndexFunc[T]) IndexFunc {
	return clientgocache.TypedIndexerFuncToIndexerFunc(indexer)
}

// TypedIndexersToIndexers is client-go's function of that name.
func TypedIndexersToIndexers[T any](indexers TypedIndexers[T]) Indexers {
	return clientgocache.TypedIndexersToIndexers(indexers)
}
