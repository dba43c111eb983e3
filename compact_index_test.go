package cache

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache/internal/podgen"
)

// byZone indexes a Pod under its node's zones: one for most nodes, none
// for node-2, two for node-3.
func byZone(obj any) ([]string, error) {
	switch n := obj.(*corev1.Pod).Spec.NodeName; n {
	case "node-2":
		return nil, nil
	case "node-3":
		return []string{"zone-a", "zone-b"}, nil
	default:
		return []string{"zone-" + n}, nil
	}
}

// A compact record holds one value per index as one slice, and any other
// form (an index with none or several) apart: both read as client-go's
// indexer does, through writes, deletes, replaces and an index added
// while the store holds objects of both forms.
func TestCompactIndexFormsReadAsClientGos(t *testing.T) {
	indexers := Indexers{clientgocache.NamespaceIndex: clientgocache.MetaNamespaceIndexFunc, "node": byNode}
	want := clientgocache.NewIndexer(MetaNamespaceKeyFunc, indexers)
	got := newCompactStore(MetaNamespaceKeyFunc, indexers, CompactOptions{})
	rng := rand.New(rand.NewPCG(5, 6))
	for step := range 400 {
		applyBoth(t, rng, step, want, got)
		if step == 150 {
			more := Indexers{"zone": byZone}
			for _, s := range []Indexer{want, got} {
				if err := s.AddIndexers(more); err != nil {
					t.Fatal(err)
				}
			}
		}
		if step%25 == 0 || step == 399 {
			compareStores(t, want, got)
		}
	}
	forms := map[string]int{}
	for _, r := range got.records() {
		switch {
		case r.odd.Load() != nil && r.odd.Load().idx != nil:
			forms["apart"]++
		case r.idx.n == len(got.funcs):
			forms["one slice"]++
		}
	}
	if forms["apart"] == 0 || forms["one slice"] == 0 || forms["apart"]+forms["one slice"] != len(got.items) {
		t.Fatalf("records by form %v of %d: want both forms, and nothing else", forms, len(got.items))
	}
}

// A record whose every index has one value holds them in one slice.
func TestCompactRecordHoldsSingleValuesInOneSlice(t *testing.T) {
	s := newCompactStore(MetaNamespaceKeyFunc, Indexers{clientgocache.NamespaceIndex: clientgocache.MetaNamespaceIndexFunc, "node": byNode}, CompactOptions{})
	p := podgen.Pod(3, 4)
	p.Spec.NodeName = "node-7"
	if err := s.Add(p); err != nil {
		t.Fatal(err)
	}
	r, _ := s.record(podKey(p))
	if r.odd.Load() != nil || fmt.Sprint(r.idx.slice()) != fmt.Sprintf("[%s node-7]", p.Namespace) {
		t.Fatalf("record's index values %q, odd %+v", r.idx.slice(), r.odd.Load())
	}
}

// An object of a type with no codec is kept as it is, beside index values
// of either form: its index functions run once per write.
func TestCompactRawObjectKeepsItsIndexValues(t *testing.T) {
	type own struct{ metav1.ObjectMeta }
	calls := 0
	byLabels := func(obj any) ([]string, error) {
		calls++
		return slices.Sorted(maps.Values(obj.(*own).Labels)), nil
	}
	s := newCompactStore(MetaNamespaceKeyFunc, Indexers{"labels": byLabels}, CompactOptions{})
	o := &own{ObjectMeta: metav1.ObjectMeta{Name: "o", Namespace: "n", Labels: map[string]string{"a": "x", "b": "y"}}}
	if err := s.Add(o); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("the index function ran %d times for one write", calls)
	}
	if got, _, _ := s.GetByKey("n/o"); got != any(o) {
		t.Fatal("an object without a codec is not kept as it is")
	}
	for _, v := range []string{"x", "y"} {
		if keys, _ := s.IndexKeys("labels", v); !slices.Equal(keys, []string{"n/o"}) {
			t.Fatalf("labels=%s: %v", v, keys)
		}
	}
}

// Writes and AddIndexers at once, the added indexes failing on what they
// index: a record's failure is written by AddIndexers under the store's
// lock and read by writes, relists and handlers without it (run with
// -race).
func TestCompactWritesBesideAddIndexers(t *testing.T) {
	failing := func(any) ([]string, error) { return nil, errors.New("not indexable") }
	s := newCompactStore(MetaNamespaceKeyFunc, Indexers{}, CompactOptions{})
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; !done.Load(); i++ {
			if err := s.Update(podgen.Pod(i%5, i+1)); err != nil && !errors.Is(err, ErrIndexerFailed) {
				t.Errorf("write %d: %v", i, err)
			}
			if r, ok := s.keepable(podKey(podgen.Pod(i%5, 0))); ok && r.indexErr() != nil {
				t.Errorf("a record an index failed on may be kept")
			}
		}
	})
	wg.Go(func() {
		defer done.Store(true)
		for round := range 100 {
			if err := s.AddIndexers(Indexers{fmt.Sprint("failing-", round): failing}); err != nil && !errors.Is(err, ErrIndexerFailed) {
				t.Errorf("round %d: %v", round, err)
			}
		}
	})
	wg.Wait()
}
