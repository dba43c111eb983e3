package cache

// ReflectorStore is what a Reflector writes into. Its method set equals
// client-go's cache.ReflectorStore, so client-go's DeltaFIFO, RealFIFO and the
// results of its NewStore/NewIndexer plug in unchanged.
//
// The Reflector calls these methods from one goroutine at a time, but a store
// is usually read concurrently by others and must be safe for that.
// An error from Add, Update, Delete or Bookmark is reported to the Reflector's
// error handler and the Reflector carries on; an error from Replace fails that
// list (the Reflector backs off and lists again); an error from Resync ends the
// current watch and leads to a relist.
type ReflectorStore interface {
	// Add inserts obj, or replaces the object with the same key.
	Add(obj interface{}) error
	// Update replaces the object with the same key as obj.
	Update(obj interface{}) error
	// Delete removes the object with the same key as obj.
	Delete(obj interface{}) error
	// Replace makes the store hold exactly list, observed at resourceVersion.
	// The store takes ownership of list.
	Replace(list []interface{}, resourceVersion string) error
	// Resync is called every resync period; most plain stores do nothing.
	Resync() error
}

// ResourceVersionUpdater is implemented by stores that want to know each
// resourceVersion the Reflector reaches while watching.
type ResourceVersionUpdater interface {
	// UpdateResourceVersion is called after each watch event is applied,
	// once the watch is past any synthetic initial ADDED events.
	UpdateResourceVersion(resourceVersion string)
}

// ReflectorBookmarkStore is implemented by stores that want watch bookmarks.
type ReflectorBookmarkStore interface {
	// Bookmark is called with the resourceVersion of each BOOKMARK event
	// received on a watch after the initial sync.
	Bookmark(resourceVersion string) error
}

// TransformFunc rewrites an object before it is stored, typically to drop
// fields the program never reads. Same shape as client-go's.
type TransformFunc func(interface{}) (interface{}, error)

// TransformingStore is implemented by stores that transform what they store
// (client-go's RealFIFO does). During a WatchList stream the Reflector
// applies the same transform to the objects it holds before Replace, so the
// untransformed initial objects are not kept alive twice.
type TransformingStore interface {
	ReflectorStore
	Transformer() TransformFunc
}
