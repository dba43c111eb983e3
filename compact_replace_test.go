package cache

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache/internal/podgen"
)

// replaceList is a relist's list for a compact store and client-go's
// indexer: for each of the 80 Pods, left out, listed as the compact store
// holds it (its record, as a relist reuses it), or changed; sometimes a
// Pod listed twice.
func replaceList(t *testing.T, rng *rand.Rand, s *compactStore, step int) (compact, plain []any) {
	for i := range 80 {
		pod := podgen.Pod(i, 1000+step)
		pod.Spec.NodeName = fmt.Sprintf("node-%d", rng.IntN(4))
		switch k := rng.IntN(10); {
		case k < 2:
			continue
		case k < 6:
			if r, ok := s.record(podKey(pod)); ok {
				obj, err := r.object()
				if err != nil {
					t.Fatal(err)
				}
				compact, plain = append(compact, r), append(plain, obj)
				continue
			}
		}
		compact, plain = append(compact, pod.DeepCopy()), append(plain, pod)
		if rng.IntN(20) == 0 {
			again := pod.DeepCopy()
			again.Spec.NodeName = "node-twice"
			compact, plain = append(compact, again), append(plain, again.DeepCopy())
		}
	}
	return compact, plain
}

// podKey is a Pod's key in a store keyed by MetaNamespaceKeyFunc.
func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// TestCompactReplaceInPlaceAgreesWithClientGos: Replaces in place (held
// records reused, objects changed, keys left out or listed twice) leave
// the compact store reading as client-go's indexer does after the same
// Replaces, its figures those of its records.
func TestCompactReplaceInPlaceAgreesWithClientGos(t *testing.T) {
	want := clientgocache.NewIndexer(MetaNamespaceKeyFunc, compactIndexers())
	got := newCompactStore(MetaNamespaceKeyFunc, compactIndexers(), CompactOptions{})
	rng := rand.New(rand.NewPCG(3, 4))
	for step := range 40 {
		compact, plain := replaceList(t, rng, got, step)
		if err := want.Replace(plain, fmt.Sprint(step)); err != nil {
			t.Fatal(err)
		}
		if err := got.Replace(compact, fmt.Sprint(step)); err != nil {
			t.Fatal(err)
		}
		compareStores(t, want, got)
		var held int64
		for _, r := range got.items {
			held += r.size()
		}
		if held != got.held || got.encoded != len(got.items) {
			t.Fatalf("step %d: figures held %d, encoded %d; the records hold %d, %d", step, got.held, got.encoded, held, len(got.items))
		}
	}
}

// TestReplaceForHandlersSaysWhatWasHeld: for each listed object, the
// record held under its key before (the same for a key listed twice),
// and tombstones, sorted, for the keys left out.
func TestReplaceForHandlersSaysWhatWasHeld(t *testing.T) {
	s := newCompactStore(MetaNamespaceKeyFunc, compactIndexers(), CompactOptions{})
	pods := map[string]*corev1.Pod{}
	for _, name := range []string{"a", "b", "c", "d"} {
		pods[name] = &corev1.Pod{}
		pods[name].Name, pods[name].Namespace, pods[name].ResourceVersion = name, "ns", "1"
		if err := s.Add(pods[name]); err != nil {
			t.Fatal(err)
		}
	}
	held := map[string]*compactRecord{}
	for name := range pods {
		held[name], _ = s.record("ns/" + name)
	}
	b2, e := pods["b"].DeepCopy(), pods["a"].DeepCopy()
	b2.ResourceVersion, e.Name = "2", "e"
	b3 := b2.DeepCopy()
	b3.ResourceVersion = "3"
	olds, gone, err := s.replaceForHandlers([]any{b2, held["d"], e, b3}, "9")
	if err != nil {
		t.Fatal(err)
	}
	wantOlds := []any{held["b"], held["d"], nil, held["b"]}
	if len(olds) != len(wantOlds) {
		t.Fatalf("%d olds, want %d", len(olds), len(wantOlds))
	}
	for i := range olds {
		if olds[i] != wantOlds[i] {
			t.Errorf("olds[%d] = %v, want %v", i, olds[i], wantOlds[i])
		}
	}
	if len(gone) != 2 || gone[0].Key != "ns/a" || gone[0].Obj != held["a"] || gone[1].Key != "ns/c" || gone[1].Obj != held["c"] {
		t.Errorf("gone = %v, want ns/a and ns/c with their records", gone)
	}
	if keys := slices.Sorted(slices.Values(s.ListKeys())); !slices.Equal(keys, []string{"ns/b", "ns/d", "ns/e"}) {
		t.Errorf("keys %v", keys)
	}
	if r, _ := s.record("ns/b"); r.resourceVersion() != "3" {
		t.Errorf("ns/b at %s, want the last listing's 3", r.resourceVersion())
	}
	if r, _ := s.record("ns/d"); r != held["d"] {
		t.Error("the reused record of ns/d was replaced")
	}
}

// TestCompactReplaceBuildsNothingBeside: a relist that lists every held
// record again allocates no second map nor index sets beside the store's
// (before, each Replace built both afresh: hundreds of allocations here).
func TestCompactReplaceBuildsNothingBeside(t *testing.T) {
	s := newCompactStore(MetaNamespaceKeyFunc, compactIndexers(), CompactOptions{})
	for i := range 2000 {
		p := podgen.Pod(i, 1+i)
		p.Namespace = fmt.Sprintf("ns-%d", i%200)
		if err := s.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	list := make([]any, 0, 2000)
	for _, r := range s.records() {
		list = append(list, r)
	}
	allocs := testing.AllocsPerRun(5, func() {
		if err := s.Replace(list, "7"); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 10 {
		t.Fatalf("a Replace of the held records allocated %.0f times, want at most 10", allocs)
	}
}

// TestRecordMarkKeepsRetired: a record's Replace mark and its retired bit
// are set apart, and the mark's number wraps past 0.
func TestRecordMarkKeepsRetired(t *testing.T) {
	r := &compactRecord{}
	r.mark(5)
	r.retire()
	if !r.marked(5) || !r.isRetired() || r.marked(6) {
		t.Fatal("retire lost the mark")
	}
	r.mark(6)
	if !r.marked(6) || !r.isRetired() {
		t.Fatal("mark lost the retired bit")
	}
	s := &compactStore{replaces: 1<<31 - 1}
	if m := s.nextReplace(); m != 1 {
		t.Fatalf("after the last number came %d, want 1", m)
	}
}

// A key listed twice, its held record first or last: the record that
// ends up held stays in the read cache and is not retired; the one pushed
// out leaves (retired in an informer's store, dropped from the cache in
// a store of its own).
func TestCompactReplaceKeyListedTwiceLeavesTheOneOut(t *testing.T) {
	for _, notifies := range []bool{false, true} {
		for _, heldFirst := range []bool{true, false} {
			s := newCompactStore(MetaNamespaceKeyFunc, compactIndexers(), CompactOptions{ReadCacheBytes: 1 << 20})
			s.notifies = notifies
			pod := podgen.Pod(1, 5)
			if err := s.Add(pod); err != nil {
				t.Fatal(err)
			}
			held, _ := s.record(podKey(pod))
			if _, err := held.object(); err != nil {
				t.Fatal(err)
			}
			changed := pod.DeepCopy()
			changed.ResourceVersion = "6"
			list := []any{held, changed}
			if !heldFirst {
				list = []any{changed, held}
			}
			if err := s.Replace(list, "7"); err != nil {
				t.Fatal(err)
			}
			now, _ := s.record(podKey(pod))
			out := held
			if !heldFirst {
				if now != held {
					t.Fatalf("notifies %v: the last listing, the held record, is not what is held", notifies)
				}
				// The changed object's record, put then pushed out.
				out = nil
			} else if now == held {
				t.Fatalf("notifies %v: the held record is still held after a later listing of its key", notifies)
			}
			if now.isRetired() {
				t.Errorf("notifies %v, held first %v: the record held is retired", notifies, heldFirst)
			}
			if out == nil {
				continue
			}
			if notifies && !out.isRetired() {
				t.Errorf("notifies %v: the record pushed out was not retired", notifies)
			}
			if !notifies && out.hot.Load() != nil {
				t.Errorf("notifies %v: the record pushed out is still in the read cache", notifies)
			}
		}
	}
}

// After a Replace that leaves a quarter or less of what the store held,
// its map and indexes are made afresh (a Go map keeps its size), and it
// reads as client-go's indexer does.
func TestCompactReplaceShrinksItsMaps(t *testing.T) {
	want := clientgocache.NewIndexer(MetaNamespaceKeyFunc, compactIndexers())
	got := newCompactStore(MetaNamespaceKeyFunc, compactIndexers(), CompactOptions{})
	all := shrinkPods()
	for _, s := range []Indexer{want, got} {
		if err := s.Replace(all, "1"); err != nil {
			t.Fatal(err)
		}
	}
	if got.widest != len(all) {
		t.Fatalf("widest %d after holding %d", got.widest, len(all))
	}
	few := all[:len(all)/5]
	for _, s := range []Indexer{want, got} {
		if err := s.Replace(few, "2"); err != nil {
			t.Fatal(err)
		}
	}
	if got.widest != len(few) {
		t.Fatalf("the maps were not made afresh: widest %d, holding %d", got.widest, len(few))
	}
	compareStores(t, want, got)
}

// A store that watch events shrink (deletes, one at a time) makes its
// maps afresh too, once it holds a quarter of the most it held, and reads
// as client-go's indexer does.
func TestCompactDeletesShrinkTheMaps(t *testing.T) {
	want := clientgocache.NewIndexer(MetaNamespaceKeyFunc, compactIndexers())
	got := newCompactStore(MetaNamespaceKeyFunc, compactIndexers(), CompactOptions{})
	all := shrinkPods()
	for _, s := range []Indexer{want, got} {
		for _, p := range all {
			if err := s.Add(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := reflect.ValueOf(got.items).UnsafePointer()
	for _, p := range all[len(all)/5:] {
		for _, s := range []Indexer{want, got} {
			if err := s.Delete(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	if reflect.ValueOf(got.items).UnsafePointer() == before || got.widest > len(all)/4 {
		t.Fatalf("the maps were not made afresh: widest %d, holding %d of %d", got.widest, len(got.items), len(all))
	}
	compareStores(t, want, got)
}

// shrinkPods are enough Pods for a store to shrink its maps after.
func shrinkPods() []any {
	var all []any
	for i := range 2 * shrinkFloor {
		all = append(all, podgen.Pod(i, i+1))
	}
	return all
}
