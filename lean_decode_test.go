package cache

import (
	"context"
	"fmt"
	goruntime "runtime"
	"sync/atomic"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kreflector/cache/cachetest"
	"github.com/kreflector/cache/internal/lean"
	"github.com/kreflector/cache/internal/listhint"
	"github.com/kreflector/cache/internal/listwatch"
)

// hintWatcher records whether the ListWatch it wraps took the Reflector's
// item function for the watches it opened, and how many of its calls were
// told that managedFields may be left out.
type hintWatcher struct {
	*ListWatch
	itemized, watches, calls, leaveOut atomic.Int32
	// opened gets a value per watch opened.
	opened chan struct{}
}

func (h *hintWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := h.ListWatch.WatchWithContext(ctx, opts)
	h.watches.Add(1)
	h.told(ctx)
	if listhint.From(ctx).WatchItemized() {
		h.itemized.Add(1)
	}
	select {
	case h.opened <- struct{}{}:
	default:
	}
	return w, err
}

func (h *hintWatcher) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	h.told(ctx)
	return h.ListWatch.ListWithContext(ctx, opts)
}

// told counts a call, and whether its hint let managedFields be left out.
func (h *hintWatcher) told(ctx context.Context) {
	h.calls.Add(1)
	if listhint.From(ctx).LeaveOutManagedFields() {
		h.leaveOut.Add(1)
	}
}

// TestLeanStepsRunWhereTheListWatchDecodes: over a clientset's ListWatch,
// a Reflector's lean options are applied by the decode workers, for LIST
// pages and WatchList streams alike, and the store gets lean objects;
// every LIST and WATCH is told that managedFields may be left out.
func TestLeanStepsRunWhereTheListWatchDecodes(t *testing.T) {
	for _, watchList := range []bool{false, true} {
		t.Run(fmt.Sprintf("watchList=%v", watchList), func(t *testing.T) {
			srv := cachetest.NewServer(cachetest.Options{})
			t.Cleanup(srv.Close)
			pods := srv.Resource(cachetest.Type{Resource: "pods", Object: &corev1.Pod{}, List: &corev1.PodList{}})
			srv.Start()
			for i := range 20 {
				p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "ns",
					Labels:        map[string]string{"app": "web"},
					ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}}}
				if _, err := pods.Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
			lw := &hintWatcher{ListWatch: listwatch.Typed(cs.CoreV1().Pods(""), "pods", nil), opened: make(chan struct{}, 1)}
			store := NewStore(MetaNamespaceKeyFunc)
			r := NewReflectorWithOptions(lw, &corev1.Pod{}, store, ReflectorOptions{
				UseWatchList: &watchList, DropManagedFields: true, ShareStrings: true})
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() { defer close(done); r.RunWithContext(ctx) }()
			if err := r.WaitForSync(ctx); err != nil {
				t.Fatal(err)
			}
			<-lw.opened
			cancel()
			<-done
			assertLean(t, store.List())
			if lw.watches.Load() == 0 || lw.itemized.Load() != lw.watches.Load() {
				t.Fatalf("%d of %d watches took the lean steps to their decode workers", lw.itemized.Load(), lw.watches.Load())
			}
			if lw.leaveOut.Load() != lw.calls.Load() {
				t.Fatalf("%d of %d LISTs and WATCHes were told that managedFields may be left out", lw.leaveOut.Load(), lw.calls.Load())
			}
		})
	}
}

// assertLean checks that objs have no managedFields and share their
// label values: one copy per stripe of the share table at most, as the
// decode workers share objects at once through as many stripes.
func assertLean(t *testing.T, objs []interface{}) {
	t.Helper()
	if len(objs) != 20 {
		t.Fatalf("%d objects, want 20", len(objs))
	}
	copies := map[*byte]bool{}
	for _, o := range objs {
		p := o.(*corev1.Pod)
		if p.ManagedFields != nil {
			t.Fatalf("%s kept its managedFields", p.Name)
		}
		copies[unsafe.StringData(p.Labels["app"])] = true
	}
	if bound := min(goruntime.GOMAXPROCS(0), lean.MaxStripes); len(copies) > bound {
		t.Fatalf("20 objects hold %d copies of their label value, want at most %d", len(copies), bound)
	}
}
