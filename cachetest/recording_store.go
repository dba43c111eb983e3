package cachetest

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	clientgocache "k8s.io/client-go/tools/cache"
)

// StoreOp names a store method.
type StoreOp string

// The store methods a RecordingStore records.
const (
	OpAdd                   StoreOp = "Add"
	OpUpdate                StoreOp = "Update"
	OpDelete                StoreOp = "Delete"
	OpReplace               StoreOp = "Replace"
	OpResync                StoreOp = "Resync"
	OpBookmark              StoreOp = "Bookmark"
	OpUpdateResourceVersion StoreOp = "UpdateResourceVersion"
)

// StoreCall is one recorded store call.
type StoreCall struct {
	Op StoreOp
	// Key is the object's key for Add, Update and Delete ("" if the key
	// function refused it).
	Key string
	// ResourceVersion is the object's for Add, Update and Delete, and the
	// argument of Replace, Bookmark and UpdateResourceVersion.
	ResourceVersion string
	// Object is the argument of Add, Update and Delete, as passed.
	Object interface{}
	// Items is the list passed to Replace.
	Items []interface{}
}

// String renders the call compactly, e.g. "Add ns/a@5" or
// "Replace rv=7 [ns/a@5 ns/b@6]" (items sorted).
func (c StoreCall) String() string {
	switch c.Op {
	case OpAdd, OpUpdate, OpDelete:
		return fmt.Sprintf("%s %s@%s", c.Op, c.Key, c.ResourceVersion)
	case OpReplace:
		ids := make([]string, len(c.Items))
		for i, o := range c.Items {
			ids[i] = describe(o)
		}
		slices.Sort(ids)
		return fmt.Sprintf("Replace rv=%s [%s]", c.ResourceVersion, strings.Join(ids, " "))
	case OpResync:
		return "Resync"
	}
	return fmt.Sprintf("%s rv=%s", c.Op, c.ResourceVersion)
}

// RecordingStore is a Reflector store that records every call in order and
// keeps the contents they produce, keyed, so that a test can both assert
// the calls and compare the contents with a Server. It implements the
// Reflector's ReflectorStore, ResourceVersionUpdater and
// ReflectorBookmarkStore, and Store's read methods (List, ListKeys, Get,
// GetByKey). It is not a client-go Store: that interface's Bookmark
// returns nothing, while ReflectorBookmarkStore's, which the Reflector
// calls and this store records, returns an error. All methods are safe for
// concurrent use.
type RecordingStore struct {
	keyFunc clientgocache.KeyFunc

	mu    sync.Mutex
	calls []StoreCall
	items map[string]interface{}
	rv    string
	// fail holds the error each failing op returns (see FailOn).
	fail map[StoreOp]error
	// changed is closed and replaced at every call.
	changed chan struct{}
}

var (
	_ clientgocache.ReflectorStore         = &RecordingStore{}
	_ clientgocache.ResourceVersionUpdater = &RecordingStore{}
	_ clientgocache.ReflectorBookmarkStore = &RecordingStore{}
)

// NewRecordingStore returns an empty RecordingStore keyed by keyFunc
// (nil means client-go's DeletionHandlingMetaNamespaceKeyFunc,
// which keys as the Reflector's does).
func NewRecordingStore(keyFunc clientgocache.KeyFunc) *RecordingStore {
	if keyFunc == nil {
		keyFunc = clientgocache.DeletionHandlingMetaNamespaceKeyFunc
	}
	return &RecordingStore{keyFunc: keyFunc, items: map[string]interface{}{}, changed: make(chan struct{})}
}

// record appends c and wakes waiters; the lock is held.
func (s *RecordingStore) recordLocked(c StoreCall) {
	s.calls = append(s.calls, c)
	close(s.changed)
	s.changed = make(chan struct{})
}

// write records op on obj and applies it; a key error is returned after
// the call is recorded.
func (s *RecordingStore) write(op StoreOp, obj interface{}) error {
	key, err := s.key(obj)
	if err != nil {
		key, err = "", clientgocache.KeyError{Obj: obj, Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recordLocked(StoreCall{Op: op, Key: key, ResourceVersion: resourceVersionOf(obj), Object: obj})
	if err != nil {
		return err
	}
	if err := s.fail[op]; err != nil {
		return err
	}
	if op == OpDelete {
		delete(s.items, key)
	} else {
		s.items[key] = obj
	}
	return nil
}

// Add records the call and stores obj.
func (s *RecordingStore) Add(obj interface{}) error { return s.write(OpAdd, obj) }

// Update records the call and stores obj.
func (s *RecordingStore) Update(obj interface{}) error { return s.write(OpUpdate, obj) }

// Delete records the call and removes obj's key.
func (s *RecordingStore) Delete(obj interface{}) error { return s.write(OpDelete, obj) }

// Replace records the call and makes the contents exactly list. If an
// item has no key, it returns that error and the contents are unchanged.
func (s *RecordingStore) Replace(list []interface{}, resourceVersion string) error {
	items := make(map[string]interface{}, len(list))
	var keyErr error
	for _, obj := range list {
		key, err := s.key(obj)
		if err != nil {
			keyErr = clientgocache.KeyError{Obj: obj, Err: err}
			break
		}
		items[key] = obj
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recordLocked(StoreCall{Op: OpReplace, ResourceVersion: resourceVersion, Items: list})
	if keyErr != nil {
		return keyErr
	}
	if err := s.fail[OpReplace]; err != nil {
		return err
	}
	s.items, s.rv = items, resourceVersion
	return nil
}

// Resync records the call.
func (s *RecordingStore) Resync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recordLocked(StoreCall{Op: OpResync})
	return s.fail[OpResync]
}

// Bookmark records the call and the resourceVersion.
func (s *RecordingStore) Bookmark(resourceVersion string) error {
	return s.setRV(OpBookmark, resourceVersion)
}

// UpdateResourceVersion records the call and the resourceVersion.
func (s *RecordingStore) UpdateResourceVersion(resourceVersion string) {
	_ = s.setRV(OpUpdateResourceVersion, resourceVersion)
}

// setRV records op and keeps rv, unless op is set to fail.
func (s *RecordingStore) setRV(op StoreOp, rv string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recordLocked(StoreCall{Op: op, ResourceVersion: rv})
	if err := s.fail[op]; err != nil {
		return err
	}
	s.rv = rv
	return nil
}

// FailOn makes every later call of op fail with err: the call is still
// recorded (and wakes WaitFor), but the contents and resourceVersion stay
// as they were, and the method returns err (UpdateResourceVersion, which
// returns nothing, is then only recorded). A nil err makes op succeed
// again. It lets a test see what a Reflector does when its store refuses
// a call, e.g. a queue that was closed.
func (s *RecordingStore) FailOn(op StoreOp, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail == nil {
		s.fail = map[StoreOp]error{}
	}
	s.fail[op] = err
}

// LastStoreSyncResourceVersion is the resourceVersion of the last Replace,
// Bookmark or UpdateResourceVersion.
func (s *RecordingStore) LastStoreSyncResourceVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rv
}

// Calls returns the calls recorded so far, in order.
func (s *RecordingStore) Calls() []StoreCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// CallStrings returns the calls recorded so far, in order, each rendered
// by StoreCall.String (e.g. "Add ns/a@5"), for a test that compares the
// calls as text.
func (s *RecordingStore) CallStrings() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.calls))
	for i, c := range s.calls {
		out[i] = c.String()
	}
	return out
}

// List returns the stored objects, in no particular order.
func (s *RecordingStore) List() []interface{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]interface{}, 0, len(s.items))
	for _, o := range s.items {
		out = append(out, o)
	}
	return out
}

// ListKeys returns the stored keys, sorted.
func (s *RecordingStore) ListKeys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.items))
	for k := range s.items {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Get returns the object stored under obj's key.
func (s *RecordingStore) Get(obj interface{}) (interface{}, bool, error) {
	key, err := s.key(obj)
	if err != nil {
		return nil, false, clientgocache.KeyError{Obj: obj, Err: err}
	}
	return s.GetByKey(key)
}

// GetByKey returns the object stored under key.
func (s *RecordingStore) GetByKey(key string) (interface{}, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.items[key]
	return o, ok, nil
}

// WaitFor blocks until cond returns true, or ctx ends (returning ctx's
// error). cond is called once at first and again after each store call,
// without the store's lock held, so it may call the store's methods.
func (s *RecordingStore) WaitFor(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		changed := s.changed
		s.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("cachetest: condition not met: %w", ctx.Err())
		}
	}
}

// key runs the key function, refusing nil pointers (which would make
// meta.Accessor-based key functions panic).
func (s *RecordingStore) key(obj interface{}) (string, error) {
	if isNil(obj) {
		return "", fmt.Errorf("nil object %T", obj)
	}
	return s.keyFunc(obj)
}

func isNil(obj interface{}) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

func resourceVersionOf(obj interface{}) string {
	if d, ok := obj.(clientgocache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if isNil(obj) {
		return ""
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

// describe renders obj as "key@resourceVersion".
func describe(obj interface{}) string {
	if isNil(obj) {
		return fmt.Sprintf("<nil %T>", obj)
	}
	key, err := clientgocache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return fmt.Sprintf("<%T>", obj)
	}
	return key + "@" + resourceVersionOf(obj)
}
