package cache

import (
	clientgocache "k8s.io/client-go/tools/cache"
)

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
