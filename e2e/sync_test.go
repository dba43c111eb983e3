//go:build e2e

package e2e

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache"
)

// bulkObjects is how many ConfigMaps the bulk namespace holds.
const bulkObjects = 3000

// bulk is a namespace of bulkObjects ConfigMaps that the initial-sync
// tests share and only read; it is created once, by the first to ask.
var bulk struct {
	once sync.Once
	ns   string
	err  error
}

// bulkNamespace returns the bulk namespace, creating it if need be.
func bulkNamespace(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	bulk.once.Do(func() {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-bulk-"}}
		ns, bulk.err = cs.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{})
		if bulk.err == nil {
			bulk.ns = ns.Name
			bulk.err = createConfigMaps(t.Context(), cs, ns.Name, bulkObjects)
		}
	})
	if bulk.err != nil {
		t.Fatalf("bulk namespace: %v", bulk.err)
	}
	return bulk.ns
}

// pagingLW counts the LIST requests made through it. With consistent set,
// it asks for RV "" where a first LIST asks for RV "0": the apiserver's
// watch cache answers a LIST at RV "0" in one piece whatever its limit
// (k8s.io/apiserver v0.37.2, pkg/storage/cacher/cacher.go,
// computeListLimit), and our Reflector, like client-go's, makes its first
// LIST at RV "0". A LIST at RV "" (a consistent read) is paginated, so
// this is how a paginated initial sync is seen against a real server.
type pagingLW struct {
	*cache.ListWatch
	consistent bool

	mu               sync.Mutex
	lists, continued int
}

func (l *pagingLW) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	l.mu.Lock()
	l.lists++
	if o.Continue != "" {
		l.continued++
	}
	l.mu.Unlock()
	if l.consistent && o.ResourceVersion == "0" && o.Continue == "" {
		o.ResourceVersion = ""
	}
	return l.ListWatch.ListWithContext(ctx, o)
}

// List is ListWithContext; the Reflector never calls it.
func (l *pagingLW) List(o metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.TODO(), o)
}

func (l *pagingLW) counts() (lists, continued int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lists, l.continued
}

// assertInitialSync checks that the Stats show one initial sync of items
// objects, made by WatchList (and no LIST at all) or by LIST.
func assertInitialSync(t *testing.T, st cache.Stats, watchList bool, items int) {
	t.Helper()
	var lists uint64
	for _, n := range st.Lists {
		lists += n
	}
	if watchList && (st.WatchLists[cache.ListInitial] != 1 || lists != 0) ||
		!watchList && (st.Lists[cache.ListInitial] != 1 || st.WatchLists[cache.ListInitial] != 0) {
		t.Errorf("initial sync not made as configured (WatchList %v): lists %v, watch lists %v", watchList, st.Lists, st.WatchLists)
	}
	if st.ItemsListed != uint64(items) {
		t.Errorf("items listed %d, want %d", st.ItemsListed, items)
	}
}

func TestPaginatedInitialList(t *testing.T) {
	t.Parallel()
	cs := client(t, testCluster.admin)
	ns := bulkNamespace(t, cs)
	const pageSize = 256
	for _, tc := range []struct {
		name       string
		consistent bool
		pages      int
	}{
		{"rv=empty", true, (bulkObjects + pageSize - 1) / pageSize},
		{"rv=0", false, 1}, // the watch cache ignores the limit
	} {
		t.Run(tc.name, func(t *testing.T) {
			lw := &pagingLW{ListWatch: configMapsLW(cs, ns), consistent: tc.consistent}
			s := cache.NewStore(cache.MetaNamespaceKeyFunc)
			r := cache.NewReflectorWithOptions(lw, &corev1.ConfigMap{}, s, cache.ReflectorOptions{Name: "paged-" + tc.name, UseWatchList: ptr.To(false)})
			r.WatchListPageSize = pageSize
			runReflector(t, r)
			mustSync(t, r)
			lists, continued := lw.counts()
			t.Logf("%d objects synced in %d LIST requests (%d continued), page size %d", bulkObjects, lists, continued, pageSize)
			if lists != tc.pages || continued != tc.pages-1 {
				t.Errorf("%d LIST requests (%d continued), want %d pages", lists, continued, tc.pages)
			}
			if tc.consistent && lists < 2 {
				t.Errorf("the initial sync was not paginated")
			}
			assertInitialSync(t, r.Stats(), false, bulkObjects)
			assertMatchesServer(t, cs, "configmaps", ns, "store", s.List())
		})
	}
}

func TestWatchListInitialSync(t *testing.T) {
	t.Parallel()
	cs := client(t, testCluster.admin)
	ns := bulkNamespace(t, cs)
	s := cache.NewStore(cache.MetaNamespaceKeyFunc)
	r := cache.NewReflectorWithOptions(configMapsLW(cs, ns), &corev1.ConfigMap{}, s, cache.ReflectorOptions{Name: "watchlist", UseWatchList: ptr.To(true)})
	runReflector(t, r)
	mustSync(t, r)
	st := r.Stats()
	t.Logf("%d objects streamed in %v", st.LastListItems, st.LastListDuration)
	assertInitialSync(t, st, true, bulkObjects)
	assertMatchesServer(t, cs, "configmaps", ns, "store", s.List())
}

// TestLiveWorkload follows creates, updates and deletes made while the
// Reflector runs, synced by WatchList, by LIST, and feeding client-go's
// DeltaFIFO (compared through the indexer the FIFO is popped into).
func TestLiveWorkload(t *testing.T) {
	t.Parallel()
	cs := client(t, testCluster.admin)
	const existing, steps = 300, 300
	for i, mode := range []string{"watchlist", "list", "deltafifo"} {
		t.Run(mode, func(t *testing.T) {
			ns := namespace(t, cs)
			mustCreateConfigMaps(t, cs, ns, existing)
			var inner cache.ReflectorStore
			var contents func() []interface{}
			settle := func(context.Context) error { return nil }
			if mode == "deltafifo" {
				s := newInformerStore(t)
				inner, contents, settle = s.fifo, s.indexer.List, s.drained
			} else {
				s := cache.NewStore(cache.MetaNamespaceKeyFunc)
				inner, contents = s, s.List
			}
			store := track(inner)
			r := cache.NewReflectorWithOptions(configMapsLW(cs, ns), &corev1.ConfigMap{}, store, cache.ReflectorOptions{Name: mode, UseWatchList: ptr.To(mode != "list")})
			runReflector(t, r)
			mustSync(t, r)
			assertInitialSync(t, r.Stats(), mode != "list", existing)
			mustReachRV(t, store, workload(t, cs, ns, existing, steps, uint64(i)))
			ctx, cancel := context.WithTimeout(t.Context(), minute)
			defer cancel()
			if err := settle(ctx); err != nil {
				t.Fatalf("FIFO not drained: %v", err)
			}
			assertMatchesServer(t, cs, "configmaps", ns, mode, contents())
		})
	}
}

func TestForbiddenListIsTheCauseWaitForSyncReturns(t *testing.T) {
	t.Parallel()
	cs := client(t, testCluster.stranger)
	lw := configMapsLW(cs, metav1.NamespaceDefault)
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	health := &healthLog{}
	r := cache.NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, cache.ReflectorOptions{OnHealthChange: health.record})
	runReflector(t, r)
	// WaitForSync returns only when its context ends, with the last
	// LIST's error as the cause. A fixed wait would have to cover the
	// first LIST on a busy server, so the test first waits (up to a
	// minute) for that LIST's answer to show in the health, and then
	// gives WaitForSync a moment.
	forbidden := func(h cache.Health) bool { return h.Reason == cache.ReasonForbidden }
	ctx, cancel := context.WithTimeout(t.Context(), minute)
	defer cancel()
	if _, err := health.waitFor(ctx, 0, forbidden); err != nil {
		t.Fatalf("health never Degraded(Forbidden): %v; last %+v", err, r.Health())
	}
	ctx, cancel = context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	err := r.WaitForSync(ctx)
	if !apierrors.IsForbidden(err) || !errors.Is(err, cache.ErrNotSynced) {
		t.Fatalf("WaitForSync = %v; want a Forbidden cause", err)
	}
	if h := r.Health(); h.State != cache.Degraded || h.Reason != cache.ReasonForbidden {
		t.Fatalf("health %+v", h)
	}
	// What the server lists for this user is nothing but a 403, so the
	// store must end as it began: empty.
	if _, err := serverList(t.Context(), cs, "configmaps", metav1.NamespaceDefault); !apierrors.IsForbidden(err) {
		t.Fatalf("the server's LIST for this user: %v, want Forbidden", err)
	}
	if objs := store.List(); len(objs) != 0 {
		t.Fatalf("the store holds %d objects the user may not list", len(objs))
	}
}
