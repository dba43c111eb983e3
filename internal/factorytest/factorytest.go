// Package factorytest is what the tests of the factories keyed by GVR
// (dynamicinformer, metadatainformer) share: starting a factory for a
// test, the checks that an informer is ours and synced, the check of
// WaitForSync once informers stop unsynced, and a one-member ring. For
// tests only.
package factorytest

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clienttesting "k8s.io/client-go/testing"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/ring"
)

// WaitLimit bounds every wait of these helpers.
const WaitLimit = 30 * time.Second

// Factory is what the helpers drive: client-go's GVR factory methods and
// our WaitForSync.
type Factory interface {
	ForResource(schema.GroupVersionResource) informers.GenericInformer
	Start(stopCh <-chan struct{})
	Shutdown()
	WaitForCacheSync(stopCh <-chan struct{}) map[schema.GroupVersionResource]bool
	WaitForSync(ctx context.Context) error
}

// Start starts f until the test ends (then stops it and waits for it),
// and waits until it has synced.
func Start(t *testing.T, f Factory) {
	t.Helper()
	stop := make(chan struct{})
	t.Cleanup(func() {
		close(stop)
		f.Shutdown()
	})
	f.Start(stop)
	ctx, cancel := context.WithTimeout(t.Context(), WaitLimit)
	defer cancel()
	if err := f.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
}

// Ours returns f's informer of gvr, checking that ForResource hands out
// one per GVR and that it is this module's.
func Ours(t *testing.T, f Factory, gvr schema.GroupVersionResource) (informers.GenericInformer, cache.InformerHealthReporter) {
	t.Helper()
	gi := f.ForResource(gvr)
	if f.ForResource(gvr) != gi {
		t.Fatal("ForResource built a second informer for the same GVR")
	}
	reporter, ok := gi.Informer().(cache.InformerHealthReporter)
	if !ok {
		t.Fatalf("Informer() is %T, not this module's", gi.Informer())
	}
	return gi, reporter
}

// Synced checks, once f has started and synced, that reporter's
// WaitForSync and f's WaitForCacheSync agree.
func Synced(t *testing.T, f Factory, reporter cache.InformerHealthReporter) {
	t.Helper()
	if err := reporter.WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	for gvr, ok := range f.WaitForCacheSync(t.Context().Done()) {
		if !ok {
			t.Fatalf("%v not synced", gvr)
		}
	}
}

// Eventually waits until done returns "" and fails with its last answer
// if that takes longer than WaitLimit.
func Eventually(t *testing.T, done func() string) {
	t.Helper()
	deadline := time.Now().Add(WaitLimit)
	for {
		msg := done()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// StoppedUnsynced, in a synctest bubble, starts f, whose every LIST of
// gvr is forbidden, and stops it 20 seconds later: WaitForSync, called
// meanwhile, then returns without waiting for its context, naming gvr,
// ErrStopped and the LIST's error; the informer's Health says Stopped.
func StoppedUnsynced(t *testing.T, f Factory, gvr schema.GroupVersionResource) {
	t.Helper()
	inf := f.ForResource(gvr).Informer()
	stop := make(chan struct{})
	f.Start(stop)
	waiting := make(chan error, 1)
	go func() { waiting <- f.WaitForSync(t.Context()) }()
	time.Sleep(20 * time.Second)
	synctest.Wait()
	close(stop)
	f.Shutdown()
	synctest.Wait()
	select {
	case err := <-waiting:
		if !errors.Is(err, cache.ErrNotSynced) || !errors.Is(err, cache.ErrStopped) || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), gvr.String()) {
			t.Fatalf("WaitForSync = %v; want %v named, stopped and forbidden", err, gvr)
		}
	default:
		t.Fatal("WaitForSync still waits after Shutdown")
	}
	if h := inf.(cache.InformerHealthReporter).Health(); h.Reflector.State != cache.Stopped || h.Reflector.HasSynced {
		t.Fatalf("health after Shutdown: %v; want Stopped, never synced", h.Reflector)
	}
}

// Ring runs, until the test ends, a ring of one member named name on
// cs's Leases (namespace "ring"), with short timings.
func Ring(t *testing.T, cs kubernetes.Interface, name string) *ring.Ring {
	t.Helper()
	r, err := ring.New(ring.Config{Client: cs.CoordinationV1(), Namespace: "ring", Name: name, Identity: "only",
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond, Buckets: 16})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

// RingInformer checks that gi's informer is a ring informer.
func RingInformer(t *testing.T, gi informers.GenericInformer) {
	t.Helper()
	if _, ok := gi.Informer().(*ring.Informer); !ok {
		t.Fatalf("the factory's informer is a %T, not a ring informer", gi.Informer())
	}
}

// HandlesAll checks that r has formed and its only member handles every
// bucket.
func HandlesAll(t *testing.T, r *ring.Ring) {
	t.Helper()
	if st := r.Status(); !st.Formed() || st.Handling != st.Buckets {
		t.Fatalf("the only member is not handling every bucket: %s", st)
	}
}

// Holds checks that lister lists exactly the objects want names, as
// namespace/name, each a T, and returns them in want's order.
func Holds[T runtime.Object](t *testing.T, lister clientgocache.GenericLister, want ...string) []T {
	t.Helper()
	objs, err := lister.List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]T{}
	var got []string
	for _, o := range objs {
		typed, ok := o.(T)
		if !ok {
			t.Fatalf("the lister returned a %T", o)
		}
		m, err := meta.Accessor(o)
		if err != nil {
			t.Fatal(err)
		}
		key := m.GetNamespace() + "/" + m.GetName()
		got, byKey[key] = append(got, key), typed
	}
	slices.Sort(got)
	if !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Fatalf("the cache holds %v, want %v", got, want)
	}
	out := make([]T, len(want))
	for i, key := range want {
		out[i] = byKey[key]
	}
	return out
}

// Forbidden is a reaction refusing every call with 403 Forbidden for gvr.
func Forbidden(gvr schema.GroupVersionResource) clienttesting.ReactionFunc {
	return func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(gvr.GroupResource(), "", errors.New("no"))
	}
}

// NamesUnstarted checks that f's WaitForSync names gvr, requested and
// never started, as not synced.
func NamesUnstarted(t *testing.T, f Factory, gvr schema.GroupVersionResource) {
	t.Helper()
	f.ForResource(gvr)
	if err := f.WaitForSync(t.Context()); !errors.Is(err, cache.ErrNotSynced) || !strings.Contains(err.Error(), gvr.String()) {
		t.Fatalf("WaitForSync with an unstarted informer: %v", err)
	}
}

// ResyncsAndShutsDown, in a synctest bubble, checks on f, built with a
// resync period of a minute and an object of gvr, that the resync comes
// within two periods and that Shutdown waits until the informers stop
// (the bubble then ends with no goroutine left).
func ResyncsAndShutsDown(t *testing.T, f Factory, gvr schema.GroupVersionResource) {
	t.Helper()
	var updates atomic.Int64
	if _, err := f.ForResource(gvr).Informer().AddEventHandler(clientgocache.ResourceEventHandlerFuncs{UpdateFunc: func(_, _ any) { updates.Add(1) }}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	f.Start(stop)
	if err := f.WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Minute) // synctest's clock
	synctest.Wait()
	if updates.Load() == 0 {
		t.Error("no resync within two resync periods")
	}
	done := make(chan struct{})
	go func() { f.Shutdown(); close(done) }()
	synctest.Wait()
	select {
	case <-done:
		t.Fatal("Shutdown returned while the informer was running")
	default:
	}
	close(stop)
	<-done
}

// Compact checks that reporter's informer holds its objects in a compact
// store, every one of them encoded, and that its lister, got, reads each
// key back reflect.DeepEqual to want, the lister of a decoded store fed
// by the same client.
func Compact(t *testing.T, reporter cache.InformerHealthReporter, got, want clientgocache.GenericLister, keys ...string) {
	t.Helper()
	st := reporter.Stats().Store
	if st == nil || st.Objects != len(keys) || st.Encoded != len(keys) {
		t.Fatalf("compact store's stats: %+v, want %d objects encoded", st, len(keys))
	}
	for _, key := range keys {
		ns, name, _ := strings.Cut(key, "/")
		g, err := got.ByNamespace(ns).Get(name)
		if err != nil {
			t.Fatal(err)
		}
		w, err := want.ByNamespace(ns).Get(name)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("%s: got %#v, want %#v", key, g, w)
		}
	}
}
