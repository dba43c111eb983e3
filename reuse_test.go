package cache

import (
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"
	"weak"

	corev1 "k8s.io/api/core/v1"
	clientgocache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache/cachetest"
)

// The state before and after the relist of the reuse tests: a unchanged,
// b changed, c deleted, d new.
func beforeRelist() []*corev1.ConfigMap {
	return []*corev1.ConfigMap{cm("a", "1"), cm("b", "2"), cm("c", "3")}
}
func afterRelist() []*corev1.ConfigMap {
	return []*corev1.ConfigMap{cm("a", "1"), cm("b", "5"), cm("d", "6")}
}

// syncWith brings the Reflector reading lw to objs at rv: by a LIST queued
// before (listed), or by feeding the WatchList the Reflector has open.
func syncWith(t *testing.T, lw *scriptLW, objs []*corev1.ConfigMap, rv string) {
	t.Helper()
	synctest.Wait()
	if lw.noWL {
		return
	}
	w := lw.current(t)
	for _, o := range objs {
		w.Add(o)
	}
	b := bookmark(rv, true)
	w.Action(b.Type, b.Object)
	synctest.Wait()
}

// relistLW answers two syncs of the states above: LISTs unless watchList.
func relistLW(watchList bool) *scriptLW {
	lw := &scriptLW{noWL: !watchList}
	if !watchList {
		lw.lists = []listReply{{list: cmList("10", "", beforeRelist()...)}, {list: cmList("20", "", afterRelist()...)}}
	}
	return lw
}

// expire ends the open watch with a 410, so the Reflector relists.
func expire(t *testing.T, lw *scriptLW) {
	t.Helper()
	lw.current(t).Error(expiredStatus())
	time.Sleep(time.Minute) // past any backoff delay
	synctest.Wait()
}

// relisted runs a Reflector with opts on store through the two syncs and
// returns what store held under each key after the first sync and after
// the second, and the Reflector's stats.
func relisted(t *testing.T, store Store, watchList bool, opts ReflectorOptions) (before, after map[string]interface{}, st Stats) {
	lw := relistLW(watchList)
	r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, opts)
	_, stop := startReflector(t, r)
	syncWith(t, lw, beforeRelist(), "10")
	before = contents(store)
	expire(t, lw)
	syncWith(t, lw, afterRelist(), "20")
	after = contents(store)
	stop()
	return before, after, r.Stats()
}

func contents(s Store) map[string]interface{} {
	out := map[string]interface{}{}
	for _, k := range s.ListKeys() {
		out[k], _, _ = s.GetByKey(k)
	}
	return out
}

var reuseStores = map[string]func() Store{
	"ours":              func() Store { return NewStore(MetaNamespaceKeyFunc) },
	"client-go store":   func() Store { return clientgocache.NewStore(clientgocache.MetaNamespaceKeyFunc) },
	"client-go indexer": func() Store { return clientgocache.NewIndexer(clientgocache.MetaNamespaceKeyFunc, Indexers{}) },
}

// A relist keeps the held object for an unchanged item (same key and
// resourceVersion), takes the new copy of a changed one, and still drops
// what the server no longer has: by LIST and by WatchList, into this
// package's and client-go's stores.
func TestRelistReusesHeldObjects(t *testing.T) {
	for name, newStore := range reuseStores {
		for _, watchList := range []bool{false, true} {
			t.Run(name+modeName(watchList), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					before, after, st := relisted(t, newStore(), watchList, ReflectorOptions{})
					checkRelisted(t, before, after, true)
					if st.ItemsReused != 1 {
						t.Errorf("ItemsReused = %d, want 1", st.ItemsReused)
					}
				})
			})
		}
	}
}

func modeName(watchList bool) string {
	if watchList {
		return "/WatchList"
	}
	return "/LIST"
}

// checkRelisted checks the contents after the relist; reused says whether
// a's held object must have been kept (otherwise it must be the new copy).
func checkRelisted(t *testing.T, before, after map[string]interface{}, reused bool) {
	t.Helper()
	if got := strings.Join(sortedKeys(after), " "); got != "ns/a ns/b ns/d" {
		t.Fatalf("after the relist the store holds %s, want ns/a ns/b ns/d", got)
	}
	if same := after["ns/a"] == before["ns/a"]; same != reused {
		t.Errorf("unchanged a: held object kept = %v, want %v", same, reused)
	}
	if after["ns/b"] == before["ns/b"] || objectID(after["ns/b"]) != "ns/b@5" {
		t.Errorf("changed b: got the held %s, want the new ns/b@5", objectID(after["ns/b"]))
	}
	if objectID(after["ns/a"]) != "ns/a@1" || objectID(after["ns/d"]) != "ns/d@6" {
		t.Errorf("a and d: %s %s", objectID(after["ns/a"]), objectID(after["ns/d"]))
	}
}

func sortedKeys(m map[string]interface{}) []string {
	return slices.Sorted(maps.Keys(m))
}

// ReuseHeldObjects false keeps every new copy, as client-go does; so does
// a store that transforms in Replace.
func TestRelistReuseOff(t *testing.T) {
	stores := map[string]func() Store{
		"option off": func() Store { return NewStore(MetaNamespaceKeyFunc) },
		"client-go store with a transformer": func() Store {
			return clientgocache.NewStore(clientgocache.MetaNamespaceKeyFunc, clientgocache.WithTransformer(func(o interface{}) (interface{}, error) { return o, nil }))
		},
	}
	for name, newStore := range stores {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				opts := ReflectorOptions{}
				if name == "option off" {
					opts.ReuseHeldObjects = ptr.To(false)
				}
				before, after, st := relisted(t, newStore(), false, opts)
				checkRelisted(t, before, after, false)
				if st.ItemsReused != 0 {
					t.Errorf("ItemsReused = %d, want 0", st.ItemsReused)
				}
			})
		})
	}
}

// Queues, transforming stores and stores without Get are never asked.
func TestHeldInOnlyPlainStores(t *testing.T) {
	identity := func(o interface{}) (interface{}, error) { return o, nil }
	cases := map[string]struct {
		store ReflectorStore
		asked bool
	}{
		"our store":                   {NewStore(MetaNamespaceKeyFunc), true},
		"client-go store":             {clientgocache.NewStore(clientgocache.MetaNamespaceKeyFunc), true},
		"client-go transformer":       {clientgocache.NewStore(clientgocache.MetaNamespaceKeyFunc, clientgocache.WithTransformer(identity)), false},
		"DeltaFIFO":                   {clientgocache.NewDeltaFIFOWithOptions(clientgocache.DeltaFIFOOptions{}), false},
		"RealFIFO":                    {clientgocache.NewRealFIFOWithOptions(clientgocache.RealFIFOOptions{KeyFunction: MetaNamespaceKeyFunc, AtomicEvents: true}), false},
		"store without Get":           {struct{ ReflectorStore }{cachetest.NewRecordingStore(nil)}, false},
		"transforming store with Get": {transformingMapStore{NewStore(MetaNamespaceKeyFunc), identity}, false},
	}
	for name, c := range cases {
		if asked := heldIn(c.store) != nil; asked != c.asked {
			t.Errorf("%s: asked = %v, want %v", name, asked, c.asked)
		}
	}
}

type transformingMapStore struct {
	Store
	t TransformFunc
}

func (s transformingMapStore) Transformer() TransformFunc { return s.t }

// A store that keeps something else under the key (here a string) is not
// reused from: the held value must have the listed object's Go type.
func TestHeldInStoreWantsTheSameType(t *testing.T) {
	s := NewStore(func(interface{}) (string, error) { return "k", nil })
	if err := s.Add("not an object"); err != nil {
		t.Fatal(err)
	}
	if _, ok := heldIn(s).held(cm("a", "1")); ok {
		t.Error("a string was taken for a held ConfigMap")
	}
}

// A listed object without a resourceVersion is never taken for the held
// one, whatever the store holds under its key.
func TestReuseNeedsAResourceVersion(t *testing.T) {
	s := NewStore(MetaNamespaceKeyFunc)
	if err := s.Add(cm("a", "")); err != nil {
		t.Fatal(err)
	}
	in := &intake{held: heldIn(s), filled: true}
	if _, reused := in.prepare(cm("a", ""), true); reused {
		t.Error("an object without resourceVersion was reused")
	}
	if _, reused := in.prepare(cm("a", "1"), false); reused {
		t.Error("reused with reuse off")
	}
}

// withBlob is cm with a 1 KiB annotation of its own, and a weak pointer
// to the annotation's bytes.
func withBlob(name, rv string) (*corev1.ConfigMap, weak.Pointer[byte]) {
	c := cm(name, rv)
	blob := strings.Repeat("x", 1024)
	c.Annotations = map[string]string{"blob": blob}
	return c, weak.Make(unsafe.StringData(blob))
}

// The copy of an unchanged object is dropped with its LIST page: by the
// time the next page is asked for, nothing holds the first page's copy.
func TestRelistDropsCopiesPageByPage(t *testing.T) {
	for _, reuse := range []bool{true, false} {
		t.Run(fmt.Sprintf("reuse=%v", reuse), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lw, copyOfA := pagedRelistLW()
				kept := make(chan bool, 1)
				lw.onContinue = func() {
					runtime.GC()
					kept <- copyOfA.Value() != nil
				}
				store := NewStore(MetaNamespaceKeyFunc)
				r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, ReflectorOptions{ReuseHeldObjects: ptr.To(reuse)})
				startReflector(t, r)
				synctest.Wait()
				expire(t, lw)
				if got := <-kept; got != !reuse {
					t.Errorf("the first page's copy of a still reachable = %v, want %v", got, !reuse)
				}
				if got := strings.Join(slices.Sorted(slices.Values(store.ListKeys())), " "); got != "ns/a ns/b" {
					t.Errorf("store holds %s", got)
				}
			})
		})
	}
}

// pagedRelistLW answers a LIST of a, then a relist in two pages: a
// unchanged, then b. The weak pointer is to the bytes of the relisted a's
// annotation, held by nothing but its page.
func pagedRelistLW() (*scriptLW, weak.Pointer[byte]) {
	a, _ := withBlob("a", "1")
	again, wp := withBlob("a", "1")
	first := cmList("20", "p2", again)
	first.RemainingItemCount = ptr.To[int64](1)
	return &scriptLW{noWL: true, lists: []listReply{{list: cmList("10", "", a)}, {list: first}, {list: cmList("20", "", cm("b", "2"))}}}, wp
}

// A sharded Reflector checks each page against its shard first and then
// reuses what its store holds among the items left.
func TestShardedRelistReuses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := mustShard(t, 1, 3)
		a, b := shardedCM(t, s, "a", "1", true), shardedCM(t, s, "b", "1", false)
		d := shardedCM(t, s, "d", "2", true)
		lw := &scriptLW{noWL: true, lists: []listReply{
			{list: cmList("10", "", a, b)},
			{list: cmList("20", "", a.DeepCopy(), b.DeepCopy(), d)},
		}}
		store := NewStore(MetaNamespaceKeyFunc)
		r := newShardedReflector(lw, store, s, true)
		startReflector(t, r)
		synctest.Wait()
		before := contents(store)
		expire(t, lw)
		after := contents(store)
		if got := strings.Join(sortedKeys(after), " "); got != "ns/a ns/d" {
			t.Fatalf("store holds %s, want ns/a ns/d", got)
		}
		if after["ns/a"] != before["ns/a"] {
			t.Error("a, unchanged and in the shard, is not the held object")
		}
		if st := r.Stats(); st.ItemsReused != 1 || st.ShardDropped != 2 {
			t.Errorf("ItemsReused %d, ShardDropped %d; want 1 and 2", st.ItemsReused, st.ShardDropped)
		}
	})
}
