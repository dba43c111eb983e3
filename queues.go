package cache

import (
	clientgocache "k8s.io/client-go/tools/cache"
)

// client-go's queues, unchanged: each name is client-go's own, so a queue
// built here is the one client-go's controllers, informers and ours take
// (New's Config.Queue, a Reflector's store), and the other way round. Our
// informers queue through RealFIFO, as client-go's do.

type (
	// FIFO is client-go's first-in-first-out queue of the latest version
	// of each key.
	FIFO = clientgocache.FIFO
	// DeltaFIFO is client-go's queue of each key's changes (Deltas).
	DeltaFIFO = clientgocache.DeltaFIFO
	// DeltaFIFOOptions configures NewDeltaFIFOWithOptions.
	DeltaFIFOOptions = clientgocache.DeltaFIFOOptions
	// RealFIFO is client-go's queue of every change in arrival order, the
	// queue of informers.
	RealFIFO = clientgocache.RealFIFO
	// RealFIFOOptions configures NewRealFIFOWithOptions.
	RealFIFOOptions = clientgocache.RealFIFOOptions
	// Heap is client-go's thread-safe priority queue of keyed objects.
	Heap = clientgocache.Heap
	// LessFunc orders a Heap.
	LessFunc = clientgocache.LessFunc
	// KeyLister lists the keys a queue's consumer already knows.
	KeyLister = clientgocache.KeyLister
	// KeyGetter gets an object a queue's consumer already knows, by key.
	KeyGetter = clientgocache.KeyGetter
	// KeyListerGetter is KeyLister and KeyGetter: a DeltaFIFO's knownObjects.
	KeyListerGetter = clientgocache.KeyListerGetter
	// UndeltaStore is a Store that hands its whole content to a push
	// function after every change.
	UndeltaStore = clientgocache.UndeltaStore
)

// ErrZeroLengthDeltasObject is client-go's error (the same value) for a
// Deltas with no delta, whose key cannot be computed.
var ErrZeroLengthDeltasObject = clientgocache.ErrZeroLengthDeltasObject

// NewFIFO is client-go's NewFIFO.
func NewFIFO(keyFunc KeyFunc) *FIFO { return clientgocache.NewFIFO(keyFunc) }

// NewDeltaFIFO is client-go's NewDeltaFIFO.
//
// Deprecated: as in client-go, use NewDeltaFIFOWithOptions.
func NewDeltaFIFO(keyFunc KeyFunc, knownObjects KeyListerGetter) *DeltaFIFO {
	return clientgocache.NewDeltaFIFO(keyFunc, knownObjects)
}

// NewDeltaFIFOWithOptions is client-go's NewDeltaFIFOWithOptions.
func NewDeltaFIFOWithOptions(opts DeltaFIFOOptions) *DeltaFIFO {
	return clientgocache.NewDeltaFIFOWithOptions(opts)
}

// NewRealFIFO is client-go's NewRealFIFO.
//
// Deprecated: as in client-go, use NewRealFIFOWithOptions.
func NewRealFIFO(keyFunc KeyFunc, knownObjects KeyListerGetter, transformer TransformFunc) *RealFIFO {
	return clientgocache.NewRealFIFO(keyFunc, knownObjects, transformer)
}

// NewRealFIFOWithOptions is client-go's NewRealFIFOWithOptions.
func NewRealFIFOWithOptions(opts RealFIFOOptions) *RealFIFO {
	return clientgocache.NewRealFIFOWithOptions(opts)
}

// NewHeap is client-go's NewHeap.
func NewHeap(keyFn KeyFunc, lessFn LessFunc) *Heap { return clientgocache.NewHeap(keyFn, lessFn) }

// NewUndeltaStore is client-go's NewUndeltaStore.
func NewUndeltaStore(pushFunc func([]interface{}), keyFunc KeyFunc) *UndeltaStore {
	return clientgocache.NewUndeltaStore(pushFunc, keyFunc)
}
