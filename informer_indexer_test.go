package cache

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

var errIndexBroken = errors.New("cannot index this one yet")

// flakyIndex is an index by name whose function fails, while told to, on
// the objects of some names.
type flakyIndex struct {
	mu      sync.Mutex
	failing map[string]bool
}

func (f *flakyIndex) fail(names ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failing = map[string]bool{}
	for _, n := range names {
		f.failing[n] = true
	}
}

func (f *flakyIndex) index(obj interface{}) ([]string, error) {
	name := obj.(*corev1.ConfigMap).Name
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failing[name] {
		return nil, fmt.Errorf("%s: %w", name, errIndexBroken)
	}
	return []string{name}, nil
}

// state is what inf's indexer holds, "name@rv" sorted, and the names its
// "byName" index holds.
func state(inf SharedIndexInformer) (stored, indexed []string) {
	idx := inf.GetIndexer()
	for _, o := range idx.List() {
		c := o.(*corev1.ConfigMap)
		stored = append(stored, c.Name+"@"+c.ResourceVersion)
	}
	for _, v := range idx.ListIndexFuncValues("byName") {
		if objs, _ := idx.ByIndex("byName", v); len(objs) > 0 {
			indexed = append(indexed, v)
		}
	}
	slices.Sort(stored)
	slices.Sort(indexed)
	return stored, indexed
}

// until sleeps a tenth of a second at a time (synctest time) until cond
// holds, failing t after a minute.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for start := time.Now(); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Since(start) > time.Minute {
			t.Fatalf("still not %s after a minute", what)
		}
		synctest.Wait()
	}
}

// An index function that fails for some objects for a while does not
// crash the informer (client-go's indexer panics) nor leave it silently
// wrong: Health turns Degraded (StoreFailing, the function's error as the
// cause) at once, the failure is counted, and the Reflector relists after
// a backoff delay, again while the function fails; once it accepts, the
// relist leaves the indexer holding exactly the server's objects, each in
// the index, and Health is Synced again.
func TestInformerIndexFailureConverges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := newScript([]listReply{
			{list: cmList("10", "", cm("a", "5"), cm("b", "6"))},
			{list: cmList("20", "", cm("b", "11"), cm("c", "12"))},
			{list: cmList("30", "", cm("b", "11"), cm("c", "12"), cm("d", "25"))},
		}, nil)
		flaky := &flakyIndex{}
		metrics := newFakeMetrics(t)
		inf := NewSharedIndexInformerWith(ReflectorOptions{UseWatchList: ptr.To(false), Metrics: metrics})(lw, &corev1.ConfigMap{}, 0, Indexers{"byName": flaky.index})
		log := &changeLog{}
		_, err := inf.AddEventHandler(log.handler())
		must(t, err)
		defer runInformer(t, inf)()
		synctest.Wait()
		flaky.fail("b", "c")
		lw.current(t).Modify(cm("b", "11"))
		synctest.Wait()
		hr := inf.(InformerHealthReporter)
		h := hr.Health().Reflector
		if h.State != Degraded || h.Reason != ReasonStoreFailing || !errors.Is(h.LastError, ErrIndexerFailed) || !errors.Is(h.LastError, errIndexBroken) {
			t.Fatalf("health after the index function failed: %v", h)
		}
		// The change is stored, and told, but left out of the index.
		if stored, indexed := state(inf); !slices.Equal(stored, []string{"a@5", "b@11"}) || !slices.Equal(indexed, []string{"a"}) {
			t.Fatalf("indexer holds %q, indexed %q", stored, indexed)
		}
		if got := log.take(); !slices.Equal(got, []string{"add a", "add b", "update b@6->11"}) {
			t.Fatalf("handler calls %q", got)
		}
		until(t, "relisted while the function fails", func() bool { return hr.Stats().Reflector.IndexerFailures >= 2 })
		if h := hr.Health().Reflector; h.State != Degraded || h.Reason != ReasonStoreFailing {
			t.Fatalf("health while the relist's Replace fails: %v", h)
		}
		flaky.fail()
		until(t, "relisted after the function accepts", func() bool { return countCalls(lw, "LIST") == 3 })
		time.Sleep(11 * time.Second) // the watch after the relist passes its probation
		synctest.Wait()
		want := []string{"b@11", "c@12", "d@25"}
		if stored, indexed := state(inf); !slices.Equal(stored, want) || !slices.Equal(indexed, []string{"b", "c", "d"}) {
			t.Fatalf("indexer holds %q, indexed %q; want the server's %q, all indexed", stored, indexed, want)
		}
		st := hr.Stats().Reflector
		if st.IndexerFailures != 2 || st.Lists[ListStoreRefused] != 2 {
			t.Errorf("IndexerFailures %d, Lists %v; want two failures and two relists for them", st.IndexerFailures, st.Lists)
		}
		name := inf.(*sharedIndexInformer).name
		if n := metrics.get(name + "/" + MetricIndexerFailures + "{}"); n != 2 {
			t.Errorf("%s = %v, want 2", MetricIndexerFailures, n)
		}
		if h := hr.Health(); !h.Healthy {
			t.Errorf("health once the indexer holds the server's objects: %v", h)
		}
	})
}

// statusList is a LIST answer holding a, and an object without metadata
// that no store can key.
func statusList(rv string, a *corev1.ConfigMap) runtime.Object {
	return &metav1.List{ListMeta: metav1.ListMeta{ResourceVersion: rv}, Items: []runtime.RawExtension{{Object: a}, {Object: &metav1.Status{}}}}
}

// An informer whose indexer refuses a relist (an object it cannot key,
// which the queue took in: a LIST's items are not checked) is not left
// silently empty, as client-go's is: Health says StoreFailing with the
// indexer's error, and the relist that follows fills it.
func TestInformerIndexerRefusalConverges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := newScript([]listReply{
			{list: statusList("10", cm("a", "5"))},
			{list: cmList("20", "", cm("a", "5"), cm("b", "15"))},
		}, nil)
		lw.noWL = true
		inf := NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, Indexers{})
		defer runInformer(t, inf)()
		synctest.Wait()
		hr := inf.(InformerHealthReporter)
		if h := hr.Health().Reflector; h.State != Degraded || h.Reason != ReasonStoreFailing || !errors.Is(h.LastError, ErrIndexerFailed) {
			t.Fatalf("health after the indexer refused the relist: %v", h)
		}
		until(t, "relisted", func() bool { return countCalls(lw, "LIST") == 2 })
		time.Sleep(11 * time.Second)
		synctest.Wait()
		if stored, _ := state(inf); !slices.Equal(stored, []string{"a@5", "b@15"}) {
			t.Fatalf("indexer holds %q, want the server's objects", stored)
		}
		if st := hr.Stats().Reflector; st.IndexerFailures != 1 || st.Lists[ListStoreRefused] != 1 {
			t.Errorf("IndexerFailures %d, Lists %v", st.IndexerFailures, st.Lists)
		}
		if h := hr.Health(); !h.Healthy {
			t.Errorf("health after the relist: %v", h)
		}
	})
}

// byNameOf returns what g's "byName" index holds under name, failing t on
// a missing object (a stale entry).
func byNameOf(t *testing.T, g *guardedIndexer, name string) []string {
	t.Helper()
	objs, err := g.ByIndex("byName", name)
	must(t, err)
	var out []string
	for _, o := range objs {
		c, ok := o.(*corev1.ConfigMap)
		if !ok {
			t.Fatalf("ByIndex(%q) holds %v: a stale entry", name, o)
		}
		out = append(out, c.Name+"@"+c.ResourceVersion)
	}
	return out
}

// The informers' indexer keeps its indexes consistent through an index
// function's failures, which it reports instead of panicking: an object
// it fails on is stored but left out of the index, and no index keeps an
// entry for an object the key no longer holds, even when the function
// fails on the object it held before (client-go's indexer cannot take
// that one's entries out).
func TestGuardedIndexerStaysConsistent(t *testing.T) {
	flaky := &flakyIndex{}
	var reports []error
	g := newGuardedIndexer(Indexers{"byName": flaky.index})
	g.reportTo(func(err error) { reports = append(reports, err) })
	a, b, c := cm("a", "1"), cm("b", "1"), cm("c", "1")
	for _, o := range []interface{}{a, b, c} {
		must(t, g.Add(o))
	}
	flaky.fail("c")
	must(t, g.Update(c)) // c was indexed, and is updated with itself
	must(t, g.Delete(c))
	if got := byNameOf(t, g, "c"); len(got) != 0 {
		t.Fatalf("index holds %q for the deleted c", got)
	}
	flaky.fail("a", "b")
	must(t, g.Update(cm("a", "2"))) // a was indexed: its entry must go
	if got := byNameOf(t, g, "a"); len(got) != 0 {
		t.Fatalf("index holds %q for a, left out since its function fails", got)
	}
	must(t, g.Delete(b)) // b was indexed: its entry must go with it
	if got := byNameOf(t, g, "b"); len(got) != 0 {
		t.Fatalf("index holds %q for the deleted b", got)
	}
	must(t, g.Update(a)) // the same object again
	if _, ok, _ := g.GetByKey("ns/a"); !ok {
		t.Fatal("a left the store")
	}
	if len(reports) != 5 || !errors.Is(reports[0], ErrIndexerFailed) || !errors.Is(reports[0], errIndexBroken) {
		t.Fatalf("reports %v; want one per write, wrapping ErrIndexerFailed and the function's error", reports)
	}
	if _, err := g.Index("byName", a); !errors.Is(err, errIndexBroken) {
		t.Errorf("Index of an object the function fails on = %v, want its error", err)
	}
	if _, err := g.GetIndexers()["byName"](a); !errors.Is(err, errIndexBroken) {
		t.Errorf("GetIndexers' function = %v, want the function as given", err)
	}
	must(t, g.AddIndexers(Indexers{"again": flaky.index}))
	if len(reports) != 6 {
		t.Errorf("AddIndexers over an object its function fails on: %d reports, want 6", len(reports))
	}
	flaky.fail()
	must(t, g.Replace([]interface{}{a, cm("c", "3")}, "3"))
	if got := byNameOf(t, g, "a"); !slices.Equal(got, []string{"a@1"}) {
		t.Errorf("after a Replace the function accepts, index holds %q for a", got)
	}
}

// countingIndex counts the calls of f.
func countingIndex(f IndexFunc, calls *int) IndexFunc {
	return func(obj interface{}) ([]string, error) {
		*calls++
		return f(obj)
	}
}

// An object the function keeps failing on costs its own calls only:
// the indexes are rebuilt only when an entry could be stale, not at each
// of its updates.
func TestGuardedIndexerRebuildsOnlyForStaleEntries(t *testing.T) {
	flaky := &flakyIndex{}
	calls := 0
	g := newGuardedIndexer(Indexers{"byName": countingIndex(flaky.index, &calls)})
	for i := range 100 {
		must(t, g.Add(cm(fmt.Sprint("o", i), "1")))
	}
	flaky.fail("o0")
	must(t, g.Update(cm("o0", "2"))) // o0 was indexed: a rebuild
	calls = 0
	for i := range 10 {
		must(t, g.Update(cm("o0", fmt.Sprint(3+i))))
	}
	if calls != 20 {
		t.Errorf("10 updates of an object left out of the index made %d calls, want 20 (no rebuild)", calls)
	}
}

// The Controller of NewIndexerInformer relists the same way: its index
// holds every object of the server once the function accepts them.
func TestIndexerInformerIndexFailureConverges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := newScript([]listReply{
			{list: cmList("10", "", cm("a", "5"))},
			{list: cmList("20", "", cm("a", "5"), cm("b", "15"))},
		}, nil)
		lw.noWL = true
		flaky := &flakyIndex{}
		flaky.fail("b")
		indexer, ctrl := NewIndexerInformer(lw, &corev1.ConfigMap{}, 0, ResourceEventHandlerFuncs{}, Indexers{"byName": flaky.index})
		_, stop := startRun(t, ctrl.RunWithContext)
		defer stop()
		synctest.Wait()
		lw.current(t).Add(cm("b", "15"))
		synctest.Wait()
		flaky.fail()
		until(t, "relisted", func() bool { return countCalls(lw, "LIST") == 2 })
		synctest.Wait()
		if objs, _ := indexer.ByIndex("byName", "b"); len(objs) != 1 {
			t.Fatalf("index holds %v for b, want it once the function accepts", objs)
		}
	})
}
