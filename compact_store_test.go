package cache

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache/internal/podgen"
)

func byNode(obj any) ([]string, error) {
	if p, ok := obj.(*corev1.Pod); ok {
		return []string{p.Spec.NodeName}, nil
	}
	return nil, nil
}

func compactIndexers() Indexers {
	return Indexers{clientgocache.NamespaceIndex: clientgocache.MetaNamespaceIndexFunc, "node": byNode}
}

// TestCompactStoreAgreesWithClientGos applies one random sequence of
// writes to client-go's indexer and to a compact one, and compares every
// read after each.
func TestCompactStoreAgreesWithClientGos(t *testing.T) {
	for _, o := range []CompactOptions{{}, {ReadCacheBytes: -1}, {Uncompressed: true, ReadCacheBytes: 40 << 10}} {
		t.Run(fmt.Sprintf("%+v", o), func(t *testing.T) {
			want := clientgocache.NewIndexer(MetaNamespaceKeyFunc, compactIndexers())
			got := NewCompactIndexer(MetaNamespaceKeyFunc, compactIndexers(), o)
			rng := rand.New(rand.NewPCG(1, 2))
			for step := range 600 {
				applyBoth(t, rng, step, want, got)
				if step%50 == 0 || step == 599 {
					compareStores(t, want, got)
				}
			}
		})
	}
}

func applyBoth(t *testing.T, rng *rand.Rand, step int, stores ...Indexer) {
	t.Helper()
	i := rng.IntN(60)
	pod := podgen.Pod(i, 1000+step)
	pod.Spec.NodeName = fmt.Sprintf("node-%d", rng.IntN(5))
	op := rng.IntN(10)
	for _, s := range stores {
		var err error
		switch {
		case op < 6:
			err = s.Update(pod.DeepCopy())
		case op < 8:
			err = s.Delete(pod.DeepCopy())
		case op == 8:
			err = s.Replace([]any{podgen.Pod(i, 9), podgen.Pod(i+1, 9)}, fmt.Sprint(step))
		default:
			s.Bookmark(fmt.Sprint(step))
		}
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
}

func compareStores(t *testing.T, want, got Indexer) {
	t.Helper()
	if w, g := slices.Sorted(slices.Values(want.ListKeys())), slices.Sorted(slices.Values(got.ListKeys())); !slices.Equal(w, g) {
		t.Fatalf("keys: got %v, want %v", g, w)
	}
	for _, k := range want.ListKeys() {
		w, _, _ := want.GetByKey(k)
		g, ok, err := got.GetByKey(k)
		if err != nil || !ok || !reflect.DeepEqual(g, w) {
			t.Fatalf("GetByKey(%s): differs (%v, %v)", k, ok, err)
		}
	}
	if len(got.List()) != len(want.List()) {
		t.Fatalf("List: %d objects, want %d", len(got.List()), len(want.List()))
	}
	for _, index := range slices.Sorted(maps.Keys(want.GetIndexers())) {
		wv, gv := slices.Sorted(slices.Values(want.ListIndexFuncValues(index))), slices.Sorted(slices.Values(got.ListIndexFuncValues(index)))
		if !slices.Equal(wv, gv) {
			t.Fatalf("%s values: got %v, want %v", index, gv, wv)
		}
		for _, v := range wv {
			wk, _ := want.IndexKeys(index, v)
			gk, _ := got.IndexKeys(index, v)
			wo, _ := want.ByIndex(index, v)
			gobjs, _ := got.ByIndex(index, v)
			if !slices.Equal(slices.Sorted(slices.Values(wk)), slices.Sorted(slices.Values(gk))) || len(wo) != len(gobjs) {
				t.Fatalf("%s=%s: keys %v, want %v", index, v, gk, wk)
			}
		}
	}
	if got.LastStoreSyncResourceVersion() != want.LastStoreSyncResourceVersion() {
		t.Fatalf("rv %q, want %q", got.LastStoreSyncResourceVersion(), want.LastStoreSyncResourceVersion())
	}
}

func TestCompactStoreIndexAndAddIndexers(t *testing.T) {
	s := NewCompactIndexer(MetaNamespaceKeyFunc, Indexers{}, CompactOptions{})
	for i := range 20 {
		if err := s.Add(podgen.Pod(i, i+1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddIndexers(Indexers{"node": byNode}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddIndexers(Indexers{"node": byNode}); err == nil {
		t.Fatal("adding an index twice did not fail")
	}
	want := podgen.Pod(3, 4)
	got, err := s.Index("node", want)
	if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Fatalf("Index: %d objects, %v", len(got), err)
	}
	if _, err := s.ByIndex("nope", "x"); err == nil {
		t.Fatal("ByIndex of an unknown index did not fail")
	}
}

func TestCompactStoreIndexFailureLeavesObjectOut(t *testing.T) {
	boom := errors.New("boom")
	s := NewCompactIndexer(MetaNamespaceKeyFunc, Indexers{"bad": func(obj any) ([]string, error) {
		if obj.(*corev1.Pod).Name == podgen.Pod(1, 1).Name {
			return nil, boom
		}
		return []string{"v"}, nil
	}}, CompactOptions{})
	if err := s.Add(podgen.Pod(0, 1)); err != nil {
		t.Fatal(err)
	}
	err := s.Add(podgen.Pod(1, 1))
	if !errors.Is(err, ErrIndexerFailed) || !errors.Is(err, boom) {
		t.Fatalf("Add: %v, want ErrIndexerFailed wrapping boom", err)
	}
	if keys, _ := s.IndexKeys("bad", "v"); len(keys) != 1 || len(s.ListKeys()) != 2 {
		t.Fatalf("index holds %v of %v", keys, s.ListKeys())
	}
}

func TestCompactStoreHoldsUnstructuredAndOtherTypes(t *testing.T) {
	s := NewCompactIndexer(MetaNamespaceKeyFunc, Indexers{}, CompactOptions{ReadCacheBytes: -1})
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "x/v1", "kind": "K", "metadata": map[string]any{"name": "u", "namespace": "n"}, "n": int64(3)}}
	type own struct{ metav1.ObjectMeta }
	o := &own{ObjectMeta: metav1.ObjectMeta{Name: "o", Namespace: "n"}}
	for _, obj := range []any{u, o} {
		if err := s.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	gu, _, _ := s.GetByKey("n/u")
	if !reflect.DeepEqual(gu, u) || gu == any(u) {
		t.Fatalf("unstructured: %v", gu)
	}
	if got, _, _ := s.GetByKey("n/o"); got != any(o) {
		t.Fatal("an object without a codec is not kept as it is")
	}
	st := s.(*compactStore).stats()
	if st.Objects != 2 || st.Encoded != 1 || st.ReadMisses != 1 || st.Decodes != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestReadCacheIsBoundedAndHot(t *testing.T) {
	const n = 200
	s := newCompactStore(MetaNamespaceKeyFunc, nil, CompactOptions{ReadCacheBytes: 20 * decodedSize(4200)})
	for i := range n {
		if err := s.Add(podgen.Pod(i, i+1)); err != nil {
			t.Fatal(err)
		}
	}
	if b := s.cache.bytes(); b > s.cache.limit.Load() {
		t.Fatalf("read cache holds %d bytes, over its %d", b, s.cache.limit.Load())
	}
	key, _ := MetaNamespaceKeyFunc(podgen.Pod(0, 1))
	first, _, _ := s.GetByKey(key)
	again, _, _ := s.GetByKey(key)
	if first != again {
		t.Fatal("a hot read decoded again")
	}
	before := s.stats()
	for i := range n {
		k, _ := MetaNamespaceKeyFunc(podgen.Pod(i, 1))
		s.GetByKey(k)
	}
	after := s.stats()
	if after.ReadMisses-before.ReadMisses < n/2 || after.ReadCacheBytes > s.cache.limit.Load() {
		t.Fatalf("reading every object: %d misses, %d bytes cached", after.ReadMisses-before.ReadMisses, after.ReadCacheBytes)
	}
	for i := range n {
		s.Delete(podgen.Pod(i, 1))
	}
	if b := s.cache.bytes(); b != 0 || s.cache.entries() > 0 {
		t.Fatalf("after deleting everything the cache holds %d bytes in %d entries", b, s.cache.entries())
	}
}

// Sharing values is not done for objects that end up encoded: it would
// save nothing and keep a table of every value.
func TestNoSharingIntoACompactStore(t *testing.T) {
	lw := newScript(nil, nil)
	r := NewReflectorWithOptions(lw, &corev1.Pod{}, NewCompactIndexer(MetaNamespaceKeyFunc, nil, CompactOptions{}), ReflectorOptions{ShareStrings: true, ShareMaps: true})
	if r.in != nil && r.in.table != nil {
		t.Fatal("a Reflector into a compact store shares values")
	}
	q := NewStore(MetaNamespaceKeyFunc)
	r = NewReflectorWithOptions(lw, &corev1.Pod{}, q, ReflectorOptions{ShareStrings: true, Compact: &CompactOptions{}})
	if r.in != nil && r.in.table != nil {
		t.Fatal("an informer's Reflector with Compact shares values")
	}
	if r = NewReflectorWithOptions(lw, &corev1.Pod{}, q, ReflectorOptions{ShareStrings: true}); r.in == nil || r.in.table == nil {
		t.Fatal("ShareStrings without a compact store shares nothing")
	}
}

// What a compact store's index reads return is what client-go's indexer
// returns, exactly: IndexKeys sorted, ListIndexFuncValues of an unknown
// index empty but not nil, the same error for an unknown index.
func TestCompactIndexReadsAsClientGos(t *testing.T) {
	ix := Indexers{clientgocache.NamespaceIndex: clientgocache.MetaNamespaceIndexFunc}
	want, got := clientgocache.NewIndexer(MetaNamespaceKeyFunc, ix), NewCompactIndexer(MetaNamespaceKeyFunc, ix, CompactOptions{})
	for i := range 32 {
		c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("cm-%02d", (i*7)%32), ResourceVersion: "1"}}
		if err := want.Add(c); err != nil {
			t.Fatal(err)
		}
		if err := got.Add(c.DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}
	w, _ := want.IndexKeys(clientgocache.NamespaceIndex, "ns")
	g, _ := got.IndexKeys(clientgocache.NamespaceIndex, "ns")
	if !slices.Equal(w, g) {
		t.Errorf("IndexKeys %v, client-go's %v", g, w)
	}
	if w, g := want.ListIndexFuncValues("none"), got.ListIndexFuncValues("none"); !reflect.DeepEqual(w, g) {
		t.Errorf("ListIndexFuncValues of no index %#v, client-go's %#v", g, w)
	}
	_, werr := want.ByIndex("none", "x")
	_, gerr := got.ByIndex("none", "x")
	_, kerr := got.IndexKeys("none", "x")
	if werr == nil || gerr == nil || kerr == nil || gerr.Error() != werr.Error() || kerr.Error() != werr.Error() {
		t.Errorf("unknown index: %v, %v; client-go's %v", gerr, kerr, werr)
	}
}
