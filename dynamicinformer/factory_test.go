package dynamicinformer_test

import (
	"testing"
	"testing/synctest"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgodynamicinformer "k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/dynamicinformer"
	"github.com/kreflector/cache/internal/factorytest"
)

var (
	_ clientgodynamicinformer.DynamicSharedInformerFactory = dynamicinformer.NewDynamicSharedInformerFactory(nil, 0)

	widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
)

func widget(ns, name string, lbls map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.com/v1")
	u.SetKind("Widget")
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(lbls)
	return u
}

func fakeClient(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{widgets: "WidgetList"}, objs...)
}

// The filtered factory's namespace and tweak select what is cached; its
// informers are ours, shared per GVR, with client-go's lister.
func TestFilteredFactory(t *testing.T) {
	x := map[string]string{"app": "x"}
	client := fakeClient(widget("a", "keep", x), widget("a", "drop", map[string]string{"app": "y"}), widget("b", "other", x))
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, "a", func(o *metav1.ListOptions) { o.LabelSelector = "app=x" })
	gi, reporter := factorytest.Ours(t, f, widgets)
	factorytest.Start(t, f)
	factorytest.Holds[*unstructured.Unstructured](t, gi.Lister(), "a/keep")
	if _, err := gi.Lister().ByNamespace("a").Get("keep"); err != nil {
		t.Fatal(err)
	}
	factorytest.Synced(t, f, reporter)
}

// The default resync period reaches the informers, and Shutdown waits
// for them.
func TestResyncAndShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		factorytest.ResyncsAndShutsDown(t, dynamicinformer.NewDynamicSharedInformerFactory(fakeClient(widget("a", "w", nil)), time.Minute), widgets)
	})
}

// WaitForSync names a GVR requested after Start.
func TestWaitForSyncNamesUnstarted(t *testing.T) {
	factorytest.NamesUnstarted(t, dynamicinformer.NewDynamicSharedInformerFactory(fakeClient(), 0), widgets)
}

// Once the factory's informers have stopped, WaitForSync does not wait
// for its context: it returns, naming the GVR that stopped unsynced
// (ErrStopped, with why it had not synced), and the informer's Health
// says Stopped.
func TestWaitForSyncReturnsOnceStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := fakeClient()
		c.PrependReactor("list", "widgets", factorytest.Forbidden(widgets))
		factorytest.StoppedUnsynced(t, dynamicinformer.NewDynamicSharedInformerFactory(c, 0), widgets)
	})
}

// WithReflectorOptions reaches the factory's informers: with Compact,
// they hold unstructured objects as bytes and read them back equal.
func TestCompactFactory(t *testing.T) {
	client := fakeClient(widget("a", "one", map[string]string{"app": "x"}), widget("b", "two", nil))
	compact := dynamicinformer.NewDynamicSharedInformerFactoryWithOptions(client, 0, dynamicinformer.WithReflectorOptions(cache.ReflectorOptions{Compact: &cache.CompactOptions{}}))
	plain := dynamicinformer.NewDynamicSharedInformerFactory(client, 0)
	gi, reporter := factorytest.Ours(t, compact, widgets)
	want := plain.ForResource(widgets)
	factorytest.Start(t, compact)
	factorytest.Start(t, plain)
	factorytest.Compact(t, reporter, gi.Lister(), want.Lister(), "a/one", "b/two")
}
