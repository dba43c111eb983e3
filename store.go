package cache

import "sync"

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

// Store is a keyed object store with client-go's cache.Store method set.
type Store interface {
	Add(obj interface{}) error
	Update(obj interface{}) error
	Delete(obj interface{}) error
	List() []interface{}
	ListKeys() []string
	Get(obj interface{}) (item interface{}, exists bool, err error)
	GetByKey(key string) (item interface{}, exists bool, err error)
	Replace(list []interface{}, resourceVersion string) error
	Resync() error
}

// NewStore returns a thread-safe Store keyed by keyFunc that also tracks the
// resourceVersion the Reflector has brought it to (see
// LastStoreSyncResourceVersion). All methods may be called concurrently.
func NewStore(keyFunc KeyFunc) Store {
	return &mapStore{keyFunc: keyFunc, items: map[string]interface{}{}}
}

type mapStore struct {
	keyFunc KeyFunc
	mu      sync.RWMutex
	items   map[string]interface{}
	rv      string
}

var (
	_ ReflectorBookmarkStore = &mapStore{}
	_ ResourceVersionUpdater = &mapStore{}
)

func (s *mapStore) key(obj interface{}) (string, error) {
	k, err := s.keyFunc(obj)
	if err != nil {
		return "", KeyError{Obj: obj, Err: err}
	}
	return k, nil
}

// Add inserts or replaces obj.
func (s *mapStore) Add(obj interface{}) error {
	k, err := s.key(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.items[k] = obj
	s.mu.Unlock()
	return nil
}

// Update inserts or replaces obj.
func (s *mapStore) Update(obj interface{}) error { return s.Add(obj) }

// Delete removes the object with obj's key, if present.
func (s *mapStore) Delete(obj interface{}) error {
	k, err := s.key(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.items, k)
	s.mu.Unlock()
	return nil
}

// List returns every object, in no particular order.
func (s *mapStore) List() []interface{} {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]interface{}, 0, len(s.items))
	for _, o := range s.items {
		out = append(out, o)
	}
	return out
}

// ListKeys returns every key, in no particular order.
func (s *mapStore) ListKeys() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.items))
	for k := range s.items {
		out = append(out, k)
	}
	return out
}

// Get returns the stored object with obj's key.
func (s *mapStore) Get(obj interface{}) (interface{}, bool, error) {
	k, err := s.key(obj)
	if err != nil {
		return nil, false, err
	}
	return s.GetByKey(k)
}

// GetByKey returns the object stored under key.
func (s *mapStore) GetByKey(key string) (interface{}, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, ok := s.items[key]
	return o, ok, nil
}

// Replace makes the store hold exactly list (later duplicates win). The
// new contents are built before the lock is taken; list is not retained.
func (s *mapStore) Replace(list []interface{}, resourceVersion string) error {
	items := make(map[string]interface{}, len(list))
	for _, o := range list {
		k, err := s.key(o)
		if err != nil {
			return err
		}
		items[k] = o
	}
	s.mu.Lock()
	s.items, s.rv = items, resourceVersion
	s.mu.Unlock()
	return nil
}

// Resync does nothing: a plain store has no one to notify.
func (s *mapStore) Resync() error { return nil }

// Bookmark records the resourceVersion of a watch bookmark.
func (s *mapStore) Bookmark(rv string) error {
	s.UpdateResourceVersion(rv)
	return nil
}

// UpdateResourceVersion records the resourceVersion the Reflector reached.
func (s *mapStore) UpdateResourceVersion(rv string) {
	s.mu.Lock()
	s.rv = rv
	s.mu.Unlock()
}

// LastStoreSyncResourceVersion is the resourceVersion of the last Replace,
// bookmark or watch event applied.
func (s *mapStore) LastStoreSyncResourceVersion() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rv
}
