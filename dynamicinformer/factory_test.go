package dynamicinformer_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	clientgodynamicinformer "k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/dynamicinformer"
)

var (
	_ clientgodynamicinformer.DynamicSharedInformerFactory = dynamicinformer.NewDynamicSharedInformerFactory(nil, 0)

	widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
)

const waitLimit = 30 * time.Second

func widget(ns, name string, lbls map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.com/v1")
	u.SetKind("Widget")
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(lbls)
	return u
}

func fakeClient(objs ...runtime.Object) dynamic.Interface {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{widgets: "WidgetList"}, objs...)
}

func keys(objs []runtime.Object) []string {
	var out []string
	for _, o := range objs {
		u := o.(*unstructured.Unstructured)
		out = append(out, u.GetNamespace()+"/"+u.GetName())
	}
	slices.Sort(out)
	return out
}

// start starts f until the test ends, then stops it and waits for it.
func start(t *testing.T, f dynamicinformer.DynamicSharedInformerFactory) {
	t.Helper()
	stop := make(chan struct{})
	t.Cleanup(func() {
		close(stop)
		f.Shutdown()
	})
	f.Start(stop)
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	if err := f.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
}

// The filtered factory's namespace and tweak select what is cached; its
// informers are ours, shared per GVR, with client-go's lister.
func TestFilteredFactory(t *testing.T) {
	x := map[string]string{"app": "x"}
	client := fakeClient(widget("a", "keep", x), widget("a", "drop", map[string]string{"app": "y"}), widget("b", "other", x))
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, "a", func(o *metav1.ListOptions) { o.LabelSelector = "app=x" })
	gi := f.ForResource(widgets)
	if f.ForResource(widgets) != gi {
		t.Fatal("ForResource built a second informer for the same GVR")
	}
	reporter, ok := gi.Informer().(cache.InformerHealthReporter)
	if !ok {
		t.Fatalf("Informer() is %T, not this module's", gi.Informer())
	}
	start(t, f)
	got, err := gi.Lister().List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a/keep"}; !slices.Equal(keys(got), want) {
		t.Fatalf("cache holds %v, want %v", keys(got), want)
	}
	if _, err := gi.Lister().ByNamespace("a").Get("keep"); err != nil {
		t.Fatal(err)
	}
	if err := reporter.WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	for gvr, ok := range f.WaitForCacheSync(t.Context().Done()) {
		if !ok {
			t.Fatalf("%v not synced", gvr)
		}
	}
}

// The default resync period reaches the informers, and Shutdown waits
// for them: on synctest's clock the resync comes, and the bubble ends
// with no goroutine left.
func TestResyncAndShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := dynamicinformer.NewDynamicSharedInformerFactory(fakeClient(widget("a", "w", nil)), time.Minute)
		var updates atomic.Int64
		inf := f.ForResource(widgets).Informer()
		if _, err := inf.AddEventHandler(clientgocache.ResourceEventHandlerFuncs{UpdateFunc: func(_, _ any) { updates.Add(1) }}); err != nil {
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
	})
}

// WaitForSync names a GVR requested after Start.
func TestWaitForSyncNamesUnstarted(t *testing.T) {
	f := dynamicinformer.NewDynamicSharedInformerFactory(fakeClient(), 0)
	f.ForResource(widgets)
	err := f.WaitForSync(t.Context())
	if !errors.Is(err, cache.ErrNotSynced) || !strings.Contains(err.Error(), widgets.String()) {
		t.Fatalf("WaitForSync with an unstarted informer: %v", err)
	}
}

// Once the factory's informers have stopped, WaitForSync does not wait
// for its context: it returns, naming the GVR that stopped unsynced
// (ErrStopped, with why it had not synced), and the informer's Health
// says Stopped.
func TestWaitForSyncReturnsOnceStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{widgets: "WidgetList"})
		c.PrependReactor("list", "widgets", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(widgets.GroupResource(), "", errors.New("no"))
		})
		f := dynamicinformer.NewDynamicSharedInformerFactory(c, 0)
		inf := f.ForResource(widgets).Informer()
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
			if !errors.Is(err, cache.ErrNotSynced) || !errors.Is(err, cache.ErrStopped) || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), widgets.String()) {
				t.Fatalf("WaitForSync = %v; want the widgets named, stopped and forbidden", err)
			}
		default:
			t.Fatal("WaitForSync still waits after Shutdown")
		}
		if h := inf.(cache.InformerHealthReporter).Health(); h.Reflector.State != cache.Stopped || h.Reflector.HasSynced {
			t.Fatalf("health after Shutdown: %v; want Stopped, never synced", h.Reflector)
		}
	})
}
