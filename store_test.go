package cache

import (
	"errors"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgocache "k8s.io/client-go/tools/cache"
)

// Compile-time proof that client-go's stores and ListWatch plug into ours,
// and ours into client-go's.
var (
	_ ReflectorStore               = &clientgocache.DeltaFIFO{}
	_ ReflectorStore               = &clientgocache.RealFIFO{}
	_ ReflectorStore               = clientgocache.NewStore(clientgocache.MetaNamespaceKeyFunc)
	_ ReflectorStore               = clientgocache.NewIndexer(clientgocache.MetaNamespaceKeyFunc, clientgocache.Indexers{})
	_ ListerWatcher                = &clientgocache.ListWatch{}
	_ ListerWatcherWithContext     = &clientgocache.ListWatch{}
	_ clientgocache.ListerWatcher  = &ListWatch{}
	_ clientgocache.ReflectorStore = NewStore(MetaNamespaceKeyFunc)
)

func TestStoreBasics(t *testing.T) {
	s := NewStore(MetaNamespaceKeyFunc)
	for _, o := range []interface{}{cm("a", "1"), cm("b", "2")} {
		if err := s.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Update(cm("a", "3")); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.Get(cm("a", ""))
	if err != nil || !ok || got.(*corev1.ConfigMap).ResourceVersion != "3" {
		t.Fatalf("Get a: %v %v %v", got, ok, err)
	}
	if err := s.Delete(cm("b", "")); err != nil {
		t.Fatal(err)
	}
	if keys := s.ListKeys(); !slices.Equal(keys, []string{"ns/a"}) || len(s.List()) != 1 {
		t.Fatalf("keys %v", keys)
	}
	if _, ok, _ := s.GetByKey("ns/b"); ok {
		t.Fatal("deleted object still present")
	}
	if err := s.Add(42); !errors.As(err, &KeyError{}) {
		t.Fatalf("Add(42) = %v, want a KeyError", err)
	}
	if _, _, err := s.Get(42); err == nil || s.Delete(42) == nil {
		t.Fatal("Get and Delete of an object without metadata must fail")
	}
	if s.Resync() != nil {
		t.Fatal("Resync of a plain store must succeed")
	}
}

func TestStoreReplaceDoesNotRetainInput(t *testing.T) {
	s := NewStore(MetaNamespaceKeyFunc).(*mapStore)
	list := []interface{}{cm("a", "1"), cm("b", "2"), cm("a", "3")}
	if err := s.Replace(list, "9"); err != nil {
		t.Fatal(err)
	}
	list[0], list[1] = cm("x", "0"), cm("y", "0")
	if keys := s.ListKeys(); len(keys) != 2 {
		t.Fatalf("keys %v", keys)
	}
	if o, _, _ := s.GetByKey("ns/a"); o.(*corev1.ConfigMap).ResourceVersion != "3" {
		t.Fatal("later duplicates must win")
	}
	if s.LastStoreSyncResourceVersion() != "9" {
		t.Fatalf("rv %q", s.LastStoreSyncResourceVersion())
	}
	s.Bookmark("11")
	if s.LastStoreSyncResourceVersion() != "11" {
		t.Fatalf("rv after bookmark %q", s.LastStoreSyncResourceVersion())
	}
	if err := s.Replace([]interface{}{"bad"}, "12"); err == nil || s.LastStoreSyncResourceVersion() != "11" {
		t.Fatal("a failed Replace must leave the store as it was")
	}
}

func TestStoreConcurrentUse(t *testing.T) {
	s := NewStore(MetaNamespaceKeyFunc)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				o := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: string(rune('a' + w)), ResourceVersion: string(rune('0' + i%10))}}
				_ = s.Add(o)
				_ = s.List()
				_, _, _ = s.GetByKey("ns/a")
			}
		})
	}
	wg.Wait()
	if len(s.ListKeys()) != 4 {
		t.Fatalf("keys %v", s.ListKeys())
	}
}

func TestKeyFuncs(t *testing.T) {
	cluster := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}}
	for _, tc := range []struct {
		obj  interface{}
		want string
	}{
		{cm("a", "1"), "ns/a"},
		{cluster, "kube-system"},
		{ExplicitKey("x/y"), "x/y"},
		{DeletedFinalStateUnknown{Key: "ns/gone"}, "ns/gone"},
	} {
		got, err := DeletionHandlingMetaNamespaceKeyFunc(tc.obj)
		if err != nil || got != tc.want {
			t.Errorf("key of %T = %q, %v; want %q", tc.obj, got, err, tc.want)
		}
	}
	if _, err := MetaNamespaceKeyFunc(DeletedFinalStateUnknown{Key: "k"}); err == nil {
		t.Error("MetaNamespaceKeyFunc must reject tombstones")
	}
	for key, want := range map[string][2]string{"ns/a": {"ns", "a"}, "a": {"", "a"}} {
		ns, name, err := SplitMetaNamespaceKey(key)
		if err != nil || ns != want[0] || name != want[1] {
			t.Errorf("split %q = %q %q %v", key, ns, name, err)
		}
	}
	if _, _, err := SplitMetaNamespaceKey("a/b/c"); err == nil {
		t.Error("three parts must be an error")
	}
	if err := (KeyError{Obj: 1, Err: errors.New("x")}); err.Error() == "" || err.Unwrap() == nil {
		t.Error("KeyError must describe and unwrap")
	}
}

func TestClientGoDeltaFIFOFedByOurReflector(t *testing.T) {
	fifo := clientgocache.NewDeltaFIFOWithOptions(clientgocache.DeltaFIFOOptions{KeyFunction: clientgocache.MetaNamespaceKeyFunc})
	var store ReflectorStore = fifo
	if err := store.Replace([]interface{}{cm("a", "1")}, "1"); err != nil {
		t.Fatal(err)
	}
	if err := store.Add(cm("b", "2")); err != nil {
		t.Fatal(err)
	}
	var popped []string
	for range 2 {
		_, err := fifo.Pop(func(obj interface{}, _ bool) error {
			for _, d := range obj.(clientgocache.Deltas) {
				popped = append(popped, string(d.Type)+" "+objectID(d.Object))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"Sync ns/a@1", "Added ns/b@2"}; !slices.Equal(popped, want) {
		t.Fatalf("popped %q, want %q", popped, want)
	}
}
