//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
)

// notifier wakes whoever waits for a condition each time it may have
// changed. The zero value is ready to use.
type notifier struct {
	mu sync.Mutex
	ch chan struct{}
}

// changed returns a channel closed at the next notify.
func (n *notifier) changed() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch == nil {
		n.ch = make(chan struct{})
	}
	return n.ch
}

// notify wakes every waiter.
func (n *notifier) notify() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch != nil {
		close(n.ch)
		n.ch = nil
	}
}

// waitUntil blocks until ok() holds (nil) or ctx ends (ctx's error). ok
// is asked again after every notify.
func (n *notifier) waitUntil(ctx context.Context, ok func() bool) error {
	for {
		// Taken before asking, so that a change in between is not missed.
		ch := n.changed()
		if ok() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// trackingStore passes everything to the store it wraps and records the
// resourceVersions a Reflector (ours or client-go's) brings it to: the
// RV of each Replace, each event (UpdateResourceVersion) and each
// bookmark. Waiters are woken on each.
type trackingStore struct {
	cache.ReflectorStore
	n notifier

	mu sync.Mutex
	// rv is the newest resourceVersion reached; listRV that of the first
	// Replace; bookmarks every bookmark's, in order.
	rv, listRV string
	bookmarks  []string
}

var (
	_ cache.ResourceVersionUpdater         = &trackingStore{}
	_ cache.ReflectorBookmarkStore         = &trackingStore{}
	_ clientgocache.ResourceVersionUpdater = &trackingStore{}
)

func track(s cache.ReflectorStore) *trackingStore { return &trackingStore{ReflectorStore: s} }

// Replace replaces the wrapped store's contents and records rv.
func (s *trackingStore) Replace(list []interface{}, rv string) error {
	if err := s.ReflectorStore.Replace(list, rv); err != nil {
		return err
	}
	s.mu.Lock()
	if s.listRV == "" {
		s.listRV = rv
	}
	s.rv = rv
	s.mu.Unlock()
	s.n.notify()
	return nil
}

// UpdateResourceVersion records rv and passes it on if the wrapped store
// wants it.
func (s *trackingStore) UpdateResourceVersion(rv string) {
	if u, ok := s.ReflectorStore.(cache.ResourceVersionUpdater); ok {
		u.UpdateResourceVersion(rv)
	}
	s.mu.Lock()
	s.rv = rv
	s.mu.Unlock()
	s.n.notify()
}

// Bookmark records rv as a bookmark and passes it on if the wrapped store
// wants bookmarks.
func (s *trackingStore) Bookmark(rv string) error {
	var err error
	if b, ok := s.ReflectorStore.(cache.ReflectorBookmarkStore); ok {
		err = b.Bookmark(rv)
	}
	s.mu.Lock()
	s.rv = rv
	s.bookmarks = append(s.bookmarks, rv)
	s.mu.Unlock()
	s.n.notify()
	return err
}

// state returns the newest RV, the first list's RV and the bookmarks.
func (s *trackingStore) state() (rv, listRV string, bookmarks []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rv, s.listRV, append([]string(nil), s.bookmarks...)
}

// waitRV blocks until the store has reached resourceVersion want (etcd's
// are numbers) or ctx ends.
func (s *trackingStore) waitRV(ctx context.Context, want string) error {
	w, err := strconv.ParseUint(want, 10, 64)
	if err != nil {
		return fmt.Errorf("resourceVersion %q is not a number: %w", want, err)
	}
	err = s.n.waitUntil(ctx, func() bool {
		rv, _, _ := s.state()
		got, err := strconv.ParseUint(rv, 10, 64)
		return err == nil && got >= w
	})
	if err != nil {
		rv, _, _ := s.state()
		return fmt.Errorf("store at resourceVersion %q, want %s: %w", rv, want, err)
	}
	return nil
}

// mustReachRV fails t unless s reaches want within a minute.
func mustReachRV(t *testing.T, s *trackingStore, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), minute)
	defer cancel()
	if err := s.waitRV(ctx, want); err != nil {
		t.Fatal(err)
	}
}

// informerStore is client-go's DeltaFIFO popped into an indexer, as an
// informer does; our Reflector feeds the FIFO. The FIFO is used without a
// transformer, so wrapping it in a trackingStore (which hides its
// Transformer method) changes nothing.
type informerStore struct {
	fifo    *clientgocache.DeltaFIFO
	indexer clientgocache.Indexer
	// popped is notified after every Pop.
	popped notifier

	mu sync.Mutex
	// barriers counts the barriers added; passed those popped.
	barriers, passed int
}

// barrierNamespace holds no real object; drained queues objects in it.
const barrierNamespace = "e2e-fifo-barrier"

// newInformerStore starts popping; the FIFO is closed and the popping
// goroutine joined when t ends.
func newInformerStore(t *testing.T) *informerStore {
	indexer := clientgocache.NewIndexer(clientgocache.MetaNamespaceKeyFunc, clientgocache.Indexers{})
	s := &informerStore{indexer: indexer, fifo: clientgocache.NewDeltaFIFOWithOptions(clientgocache.DeltaFIFOOptions{KnownObjects: indexer, EmitDeltaTypeReplaced: true})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			_, err := s.fifo.Pop(s.apply)
			s.popped.notify()
			if errors.Is(err, clientgocache.ErrFIFOClosed) {
				return
			}
		}
	}()
	t.Cleanup(func() { s.fifo.Close(); <-done })
	return s
}

// apply writes one key's deltas into the indexer, or counts a barrier.
func (s *informerStore) apply(obj interface{}, _ bool) error {
	deltas := obj.(clientgocache.Deltas)
	if m, ok := deltas.Newest().Object.(metav1.Object); ok && m.GetNamespace() == barrierNamespace {
		s.mu.Lock()
		s.passed++
		s.mu.Unlock()
		return nil
	}
	for _, d := range deltas {
		var err error
		if d.Type == clientgocache.Deleted {
			err = s.indexer.Delete(d.Object)
		} else {
			err = s.indexer.Update(d.Object)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// drained blocks until everything queued in the FIFO before the call has
// been applied to the indexer, or ctx ends. It queues a barrier object
// under a new key, which the FIFO pops after every key queued before.
func (s *informerStore) drained(ctx context.Context) error {
	s.mu.Lock()
	s.barriers++
	n := s.barriers
	s.mu.Unlock()
	barrier := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: barrierNamespace, Name: "barrier-" + strconv.Itoa(n)}}
	if err := s.fifo.Add(barrier); err != nil {
		return fmt.Errorf("queueing a barrier: %w", err)
	}
	return s.popped.waitUntil(ctx, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.passed >= n
	})
}
