package cache

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache/cachetest"
)

// Compile-time half of the audit: a client-go value of each audited type is
// assignable to ours and back. Any row that stops being an alias of
// client-go's type breaks the build here.
var (
	_ DeletedFinalStateUnknown               = clientgocache.DeletedFinalStateUnknown{}
	_ clientgocache.DeletedFinalStateUnknown = DeletedFinalStateUnknown{}
	_ ExplicitKey                            = clientgocache.ExplicitKey("")
	_ clientgocache.ExplicitKey              = ExplicitKey("")
	_ error                                  = KeyError{}
	_ KeyError                               = clientgocache.KeyError{}
	_ clientgocache.KeyError                 = KeyError{}
	_ KeyFunc                                = clientgocache.MetaNamespaceKeyFunc
	_ clientgocache.KeyFunc                  = MetaNamespaceKeyFunc
	_ TransformFunc                          = clientgocache.TransformFunc(nil)
	_ clientgocache.TransformFunc            = TransformFunc(nil)
	_ ListFunc                               = clientgocache.ListFunc(nil)
	_ clientgocache.ListFunc                 = ListFunc(nil)
	_ WatchFunc                              = clientgocache.WatchFunc(nil)
	_ clientgocache.WatchFunc                = WatchFunc(nil)
	_ ListWithContextFunc                    = clientgocache.ListWithContextFunc(nil)
	_ clientgocache.ListWithContextFunc      = ListWithContextFunc(nil)
	_ WatchFuncWithContext                   = clientgocache.WatchFuncWithContext(nil)
	_ clientgocache.WatchFuncWithContext     = WatchFuncWithContext(nil)
	_ *ListWatch                             = &clientgocache.ListWatch{}
	_ *clientgocache.ListWatch               = &ListWatch{}
	_ *VeryShortWatchError                   = &clientgocache.VeryShortWatchError{}
	_ *clientgocache.VeryShortWatchError     = &VeryShortWatchError{}
	_ StoreOption                            = clientgocache.WithTransformer(nil)
	_ GaugeMetric                            = clientgocache.GaugeMetric(nil)
	_ clientgocache.GaugeMetric              = GaugeMetric(nil)

	_ Store                                        = clientgocache.NewStore(clientgocache.MetaNamespaceKeyFunc)
	_ clientgocache.Store                          = NewStore(MetaNamespaceKeyFunc)
	_ ReflectorStore                               = clientgocache.ReflectorStore(nil)
	_ clientgocache.ReflectorStore                 = ReflectorStore(nil)
	_ TransformingStore                            = &clientgocache.RealFIFO{}
	_ TransformingStore                            = &clientgocache.DeltaFIFO{}
	_ clientgocache.TransformingStore              = TransformingStore(nil)
	_ ResourceVersionUpdater                       = clientgocache.ResourceVersionUpdater(nil)
	_ clientgocache.ResourceVersionUpdater         = ResourceVersionUpdater(nil)
	_ ReflectorBookmarkStore                       = &clientgocache.RealFIFO{}
	_ clientgocache.ReflectorBookmarkStore         = ReflectorBookmarkStore(nil)
	_ Getter                                       = clientgocache.Getter(nil)
	_ clientgocache.Getter                         = Getter(nil)
	_ Lister                                       = clientgocache.Lister(nil)
	_ clientgocache.Lister                         = Lister(nil)
	_ ListerWithContext                            = clientgocache.ListerWithContext(nil)
	_ clientgocache.ListerWithContext              = ListerWithContext(nil)
	_ Watcher                                      = clientgocache.Watcher(nil)
	_ clientgocache.Watcher                        = Watcher(nil)
	_ WatcherWithContext                           = clientgocache.WatcherWithContext(nil)
	_ clientgocache.WatcherWithContext             = WatcherWithContext(nil)
	_ ListerWatcher                                = clientgocache.ListerWatcher(nil)
	_ clientgocache.ListerWatcher                  = ListerWatcher(nil)
	_ ListerWatcherWithContext                     = clientgocache.ListerWatcherWithContext(nil)
	_ clientgocache.ListerWatcherWithContext       = ListerWatcherWithContext(nil)
	_ clientgocache.ListerWatcherWithContext       = ToListerWatcherWithContext(&clientgocache.ListWatch{})
	_ func(ListerWatcher) ListerWatcherWithContext = clientgocache.ToListerWatcherWithContext
)

// sameType reports whether A and B are one type (an alias), not two types
// that merely look alike.
func sameType[A, B any]() bool { return reflect.TypeFor[A]() == reflect.TypeFor[B]() }

// TestTypesAreClientGos is the run-time half of the audit: the
// compatibility table (README.md, docs/compatibility.md), row by row. "same" rows must be client-go's own
// type; "own" rows are distinct on purpose, for the reason given.
func TestTypesAreClientGos(t *testing.T) {
	same := map[string]bool{
		"DeletedFinalStateUnknown": sameType[DeletedFinalStateUnknown, clientgocache.DeletedFinalStateUnknown](),
		"ExplicitKey":              sameType[ExplicitKey, clientgocache.ExplicitKey](),
		"KeyError":                 sameType[KeyError, clientgocache.KeyError](),
		"KeyFunc":                  sameType[KeyFunc, clientgocache.KeyFunc](),
		"TransformFunc":            sameType[TransformFunc, clientgocache.TransformFunc](),
		"ListFunc":                 sameType[ListFunc, clientgocache.ListFunc](),
		"WatchFunc":                sameType[WatchFunc, clientgocache.WatchFunc](),
		"ListWithContextFunc":      sameType[ListWithContextFunc, clientgocache.ListWithContextFunc](),
		"WatchFuncWithContext":     sameType[WatchFuncWithContext, clientgocache.WatchFuncWithContext](),
		"ListWatch":                sameType[ListWatch, clientgocache.ListWatch](),
		"VeryShortWatchError":      sameType[VeryShortWatchError, clientgocache.VeryShortWatchError](),
		"Store":                    sameType[Store, clientgocache.Store](),
		"StoreOption":              sameType[StoreOption, clientgocache.StoreOption](),
		"ReflectorStore":           sameType[ReflectorStore, clientgocache.ReflectorStore](),
		"TransformingStore":        sameType[TransformingStore, clientgocache.TransformingStore](),
		"ResourceVersionUpdater":   sameType[ResourceVersionUpdater, clientgocache.ResourceVersionUpdater](),
		"ReflectorBookmarkStore":   sameType[ReflectorBookmarkStore, clientgocache.ReflectorBookmarkStore](),
		"Getter":                   sameType[Getter, clientgocache.Getter](),
		"Lister":                   sameType[Lister, clientgocache.Lister](),
		"ListerWithContext":        sameType[ListerWithContext, clientgocache.ListerWithContext](),
		"Watcher":                  sameType[Watcher, clientgocache.Watcher](),
		"WatcherWithContext":       sameType[WatcherWithContext, clientgocache.WatcherWithContext](),
		"ListerWatcher":            sameType[ListerWatcher, clientgocache.ListerWatcher](),
		"ListerWatcherWithContext": sameType[ListerWatcherWithContext, clientgocache.ListerWatcherWithContext](),
		"GaugeMetric":              sameType[GaugeMetric, clientgocache.GaugeMetric](),
		// Own types: each takes our *Reflector, which a handler uses to
		// read the failing Reflector; client-go's take client-go's.
		"WatchErrorHandler (own)":            !sameType[WatchErrorHandler, clientgocache.WatchErrorHandler](),
		"WatchErrorHandlerWithContext (own)": !sameType[WatchErrorHandlerWithContext, clientgocache.WatchErrorHandlerWithContext](),
	}
	for name, ok := range same {
		if !ok {
			t.Errorf("%s: not as the README's compatibility table says", name)
		}
	}
}

// client-go's DeltaFIFO, told by a relist that an object it knew is gone,
// emits a client-go DeletedFinalStateUnknown. Our key functions must key it
// and our store must delete by it, as client-go's would.
func TestClientGoTombstoneThroughOurKeyFuncsAndStore(t *testing.T) {
	ours := NewStore(DeletionHandlingMetaNamespaceKeyFunc)
	fifo := clientgocache.NewDeltaFIFOWithOptions(clientgocache.DeltaFIFOOptions{
		KeyFunction: MetaNamespaceKeyFunc, KnownObjects: ours,
	})
	// drain pops n queued keys (Pop blocks on an empty queue).
	drain := func(n int) (tombstones []interface{}) {
		for range n {
			_, err := fifo.Pop(func(obj interface{}, _ bool) error {
				for _, d := range obj.(clientgocache.Deltas) {
					var err error
					switch d.Type {
					case clientgocache.Deleted:
						if _, ok := d.Object.(clientgocache.DeletedFinalStateUnknown); ok {
							tombstones = append(tombstones, d.Object)
						}
						err = ours.Delete(d.Object)
					default:
						err = ours.Add(d.Object)
					}
					if err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatalf("pop: %v", err)
			}
		}
		return tombstones
	}
	if err := fifo.Replace([]interface{}{cm("a", "1"), cm("b", "2")}, "2"); err != nil {
		t.Fatal(err)
	}
	drain(2)
	if err := fifo.Replace([]interface{}{cm("a", "1")}, "3"); err != nil {
		t.Fatal(err)
	}
	tombstones := drain(2)
	if len(tombstones) != 1 {
		t.Fatalf("DeltaFIFO emitted %d tombstones, want 1", len(tombstones))
	}
	if key, err := DeletionHandlingMetaNamespaceKeyFunc(tombstones[0]); err != nil || key != "ns/b" {
		t.Fatalf("our key of client-go's tombstone = %q, %v; want ns/b", key, err)
	}
	if keys := ours.ListKeys(); len(keys) != 1 || keys[0] != "ns/a" {
		t.Fatalf("our store after the tombstone holds %v, want [ns/a]", keys)
	}
	// And the other way: our tombstone through client-go's key function.
	if key, err := clientgocache.DeletionHandlingMetaNamespaceKeyFunc(DeletedFinalStateUnknown{Key: "ns/z"}); err != nil || key != "ns/z" {
		t.Fatalf("client-go's key of our tombstone = %q, %v", key, err)
	}
}

// NewStore with client-go's options is client-go's store, configured by them.
func TestNewStoreAcceptsClientGoOptions(t *testing.T) {
	calls := 0
	s := NewStore(MetaNamespaceKeyFunc, clientgocache.WithTransformer(func(o interface{}) (interface{}, error) {
		calls++
		return o, nil
	}))
	if err := s.Add(cm("a", "1")); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("transformer called %d times, want 1", calls)
	}
	if _, lean := NewStore(MetaNamespaceKeyFunc).(*mapStore); !lean {
		t.Fatal("without options NewStore must return our own store")
	}
}

// countingTransform counts its calls and marks what it returns.
type countingTransform struct{ calls int }

func (c *countingTransform) transform(obj interface{}) (interface{}, error) {
	c.calls++
	o := obj.(*corev1.ConfigMap).DeepCopy()
	o.Labels = map[string]string{"transformed": "yes"}
	return o, nil
}

// fifoRunner runs one Reflector into a client-go FIFO until ctx ends.
type fifoRunner func(ctx context.Context, lw ListerWatcher, store ReflectorStore)

// TestClientGoFIFOTransformerUnderWatchList: client-go's RealFIFO and
// DeltaFIFO are TransformingStores, so during a WatchList sync both
// Reflectors transform each initial object as it arrives and again in the
// FIFO's Replace: the same number of transformer calls for the same stream.
func TestClientGoFIFOTransformerUnderWatchList(t *testing.T) {
	stream := []watch.Event{ev(watch.Added, cm("a", "5")), ev(watch.Added, cm("b", "7")), bookmark("10", true), ev(watch.Modified, cm("a", "11"))}
	fifos := map[string]func(TransformFunc) ReflectorStore{
		"RealFIFO": func(tf TransformFunc) ReflectorStore {
			return clientgocache.NewRealFIFOWithOptions(clientgocache.RealFIFOOptions{KeyFunction: MetaNamespaceKeyFunc, KnownObjects: NewStore(MetaNamespaceKeyFunc), Transformer: tf})
		},
		"DeltaFIFO": func(tf TransformFunc) ReflectorStore {
			return clientgocache.NewDeltaFIFOWithOptions(clientgocache.DeltaFIFOOptions{KeyFunction: MetaNamespaceKeyFunc, KnownObjects: NewStore(MetaNamespaceKeyFunc), Transformer: tf})
		},
	}
	runners := map[string]fifoRunner{
		"client-go": func(ctx context.Context, lw ListerWatcher, store ReflectorStore) {
			clientgocache.NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, clientgocache.ReflectorOptions{}).RunWithContext(ctx)
		},
		"ours": func(ctx context.Context, lw ListerWatcher, store ReflectorStore) {
			NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, ReflectorOptions{}).RunWithContext(ctx)
		},
	}
	for fifoName, newFIFO := range fifos {
		t.Run(fifoName, func(t *testing.T) {
			calls := map[string]int{}
			for who, run := range runners {
				sc := scenario{watches: []watchReply{{events: stream, hang: true}}}
				tf := &countingTransform{}
				play(t, sc, func(ctx context.Context, _ scenario, lw ListerWatcher, _ *cachetest.RecordingStore) {
					run(ctx, lw, newFIFO(tf.transform))
				})
				calls[who] = tf.calls
			}
			if calls["ours"] != calls["client-go"] || calls["ours"] == 0 {
				t.Fatalf("transformer calls: ours %d, client-go %d", calls["ours"], calls["client-go"])
			}
		})
	}
}

// The WatchList buffer holds transformed objects, not the originals.
func TestWatchListBufferHoldsTransformedObjects(t *testing.T) {
	tf := &countingTransform{}
	fifo := clientgocache.NewRealFIFOWithOptions(clientgocache.RealFIFOOptions{KeyFunction: MetaNamespaceKeyFunc, KnownObjects: NewStore(MetaNamespaceKeyFunc), Transformer: tf.transform})
	e := newInitialEvents(fifo, nil, false)
	if err := e.Add(cm("a", "1")); err != nil {
		t.Fatal(err)
	}
	if got := e.items[0].(*corev1.ConfigMap).Labels["transformed"]; got != "yes" || tf.calls != 1 {
		t.Fatalf("buffered object not transformed (label %q, %d calls)", got, tf.calls)
	}
}
