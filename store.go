package cache

import (
	"sync"

	clientgocache "k8s.io/client-go/tools/cache"
)

// ReflectorStore is what a Reflector writes into. It is client-go's
// interface, so client-go's DeltaFIFO, RealFIFO and the results of its
// NewStore/NewIndexer plug in unchanged, and a store written for either
// package serves both.
//
// The Reflector calls these methods from one goroutine at a time, but a store
// is usually read concurrently by others and must be safe for that.
// An error from Add, Update, Delete or Bookmark is logged by the
// Reflector's logger and the Reflector carries on; an error from Replace
// fails that sync (the Reflector backs off and syncs again); an error from
// Resync ends the current watch and leads to a relist.
type ReflectorStore = clientgocache.ReflectorStore

// ResourceVersionUpdater is implemented by stores that want to know each
// resourceVersion the Reflector reaches while watching: UpdateResourceVersion
// is called after each watch event or bookmark is applied, once the watch
// is past any synthetic initial ADDED events. It is client-go's interface.
type ResourceVersionUpdater = clientgocache.ResourceVersionUpdater

// ReflectorBookmarkStore is implemented by stores that want watch
// bookmarks: Bookmark is called with the resourceVersion of each BOOKMARK
// event received on a watch after the initial sync. It is client-go's
// interface (client-go's RealFIFO implements it).
type ReflectorBookmarkStore = clientgocache.ReflectorBookmarkStore

// TransformFunc rewrites an object before it is stored, typically to drop
// fields the program never reads. It is client-go's type.
type TransformFunc = clientgocache.TransformFunc

// TransformingStore is implemented by stores that transform what they store
// (client-go's RealFIFO and DeltaFIFO do). During a WatchList stream the
// Reflector applies the same transform to each initial object as it
// arrives, so the untransformed objects are not kept until Replace. It is
// client-go's interface, whose Transformer returns client-go's
// TransformFunc.
type TransformingStore = clientgocache.TransformingStore

// Store is a keyed object store. It is client-go's interface, so our
// NewStore's result is accepted wherever client-go wants a Store.
type Store = clientgocache.Store

// StoreOption configures a store made by client-go's NewStore or
// NewIndexer (for example client-go's WithTransformer). It is client-go's
// type.
type StoreOption = clientgocache.StoreOption

// NewStore returns a thread-safe Store keyed by keyFunc that also tracks the
// resourceVersion the Reflector has brought it to (see
// LastStoreSyncResourceVersion). All methods may be called concurrently.
//
// Without options the store is a lean map of our own. Options are
// client-go's and configure client-go's store, so with any option NewStore
// returns client-go's NewStore(keyFunc, opts...) instead.
func NewStore(keyFunc KeyFunc, opts ...StoreOption) Store {
	if len(opts) > 0 {
		return clientgocache.NewStore(keyFunc, opts...)
	}
	return &mapStore{keyFunc: keyFunc, items: map[string]interface{}{}}
}

type mapStore struct {
	keyFunc KeyFunc
	mu      sync.RWMutex
	items   map[string]interface{}
	rv      string
}

var (
	_ Store                  = &mapStore{}
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

// Bookmark records rv as the resourceVersion the store has reached, as
// client-go's Store does. (The Reflector reports bookmarks through
// UpdateResourceVersion.)
func (s *mapStore) Bookmark(rv string) { s.UpdateResourceVersion(rv) }

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
