package metadatainformer_test

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
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/metadata/metadatalister"
	clienttesting "k8s.io/client-go/testing"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/metadatainformer"
)

var pods = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

const waitLimit = 30 * time.Second

// podMeta is a Pod's metadata as the metadata client's tracker stores it.
func podMeta(ns, name string, lbls map[string]string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls},
	}
}

func fakeClient(objs ...runtime.Object) *metadatafake.FakeMetadataClient {
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		panic(err)
	}
	return metadatafake.NewSimpleMetadataClient(scheme, objs...)
}

// keys lists objs' namespace/name, sorted; every one must be metadata.
func keys(t *testing.T, objs []runtime.Object) []string {
	t.Helper()
	var out []string
	for _, o := range objs {
		m, ok := o.(*metav1.PartialObjectMetadata)
		if !ok {
			t.Fatalf("the lister returned a %T, not *metav1.PartialObjectMetadata", o)
		}
		out = append(out, m.Namespace+"/"+m.Name)
	}
	slices.Sort(out)
	return out
}

// start starts f until the test ends, then stops it and waits for it.
func start(t *testing.T, f metadatainformer.SharedInformerFactory) {
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

// The filtered factory's namespace and tweak select what is cached (the
// tweak reaches LIST and WATCH alike); its informers are ours, one per
// GVR, with client-go's metadata lister, whose values are client-go's.
func TestFilteredFactory(t *testing.T) {
	x := map[string]string{"app": "x"}
	client := fakeClient(podMeta("a", "keep", x), podMeta("a", "drop", map[string]string{"app": "y"}), podMeta("b", "other", x))
	f := metadatainformer.NewFilteredSharedInformerFactory(client, 0, "a", func(o *metav1.ListOptions) { o.LabelSelector = "app=x" })
	gi := f.ForResource(pods)
	if f.ForResource(pods) != gi {
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
	if want := []string{"a/keep"}; !slices.Equal(keys(t, got), want) {
		t.Fatalf("cache holds %v, want %v", keys(t, got), want)
	}
	var lister metadatalister.Lister = metadatalister.New(gi.Informer().GetIndexer(), pods)
	if m, err := lister.Namespace("a").Get("keep"); err != nil || m.Labels["app"] != "x" {
		t.Fatalf("client-go's lister over our indexer: %v, %v", m, err)
	}
	if err := reporter.WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	for gvr, ok := range f.WaitForCacheSync(t.Context().Done()) {
		if !ok {
			t.Fatalf("%v not synced", gvr)
		}
	}
	// The watch opens after the LIST: wait for it.
	want := []string{"list a app=x", "watch a app=x"}
	deadline := time.Now().Add(waitLimit)
	for calls := listsAndWatches(client); !slices.Equal(calls, want); calls = listsAndWatches(client) {
		if time.Now().After(deadline) {
			t.Fatalf("calls %v; want %v", calls, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// listsAndWatches lists the client's LIST and WATCH calls as "verb
// namespace labelSelector".
func listsAndWatches(client *metadatafake.FakeMetadataClient) []string {
	var out []string
	for _, a := range client.Actions() {
		switch a := a.(type) {
		case clienttesting.ListAction:
			out = append(out, "list "+a.GetNamespace()+" "+a.GetListRestrictions().Labels.String())
		case clienttesting.WatchAction:
			out = append(out, "watch "+a.GetNamespace()+" "+a.GetWatchRestrictions().Labels.String())
		}
	}
	return out
}

// Objects written after the sync reach the cache through the watch, as
// PartialObjectMetadata.
func TestWatchReachesTheCache(t *testing.T) {
	client := fakeClient(podMeta("a", "one", nil))
	f := metadatainformer.NewSharedInformerFactory(client, 0)
	gi := f.ForResource(pods)
	start(t, f)
	created := podMeta("b", "two", map[string]string{"late": "yes"})
	if _, err := client.Resource(pods).Namespace("b").(metadatafake.MetadataClient).CreateFake(created, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	for {
		if obj, err := gi.Lister().ByNamespace("b").Get("two"); err == nil {
			if m := obj.(*metav1.PartialObjectMetadata); m.Labels["late"] != "yes" {
				t.Fatalf("cached %v", m)
			}
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("the created object never reached the cache")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// NewSharedInformerFactoryWithOptions applies its options: namespace,
// tweak and transform (client-go's WithTransform) all reach the informer.
func TestOptions(t *testing.T) {
	client := fakeClient(podMeta("a", "one", map[string]string{"app": "x"}), podMeta("a", "two", nil), podMeta("b", "three", map[string]string{"app": "x"}))
	var transformed atomic.Int64
	f := metadatainformer.NewSharedInformerFactoryWithOptions(client, 0,
		metadatainformer.WithNamespace("a"),
		metadatainformer.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "app=x" }),
		metadatainformer.WithTransform(func(obj any) (any, error) {
			transformed.Add(1)
			m := obj.(*metav1.PartialObjectMetadata)
			m.Annotations = map[string]string{"seen": "transform"}
			return m, nil
		}))
	gi := f.ForResource(pods)
	start(t, f)
	got, err := gi.Lister().List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a/one"}; !slices.Equal(keys(t, got), want) {
		t.Fatalf("cache holds %v, want %v", keys(t, got), want)
	}
	if got[0].(*metav1.PartialObjectMetadata).Annotations["seen"] != "transform" || transformed.Load() == 0 {
		t.Fatal("the factory's transform was not applied")
	}
}

// NewFilteredMetadataInformer alone builds our informer with the indexers
// given and the tweak applied.
func TestNewFilteredMetadataInformer(t *testing.T) {
	client := fakeClient(podMeta("a", "one", map[string]string{"app": "x"}), podMeta("b", "two", map[string]string{"app": "x"}), podMeta("b", "three", nil))
	byApp := func(obj any) ([]string, error) {
		return []string{obj.(*metav1.PartialObjectMetadata).Labels["app"]}, nil
	}
	gi := metadatainformer.NewFilteredMetadataInformer(client, pods, metav1.NamespaceAll, 0, cache.Indexers{"app": byApp},
		func(o *metav1.ListOptions) { o.LabelSelector = "app=x" })
	reporter, ok := gi.Informer().(cache.InformerHealthReporter)
	if !ok {
		t.Fatalf("Informer() is %T, not this module's", gi.Informer())
	}
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	go gi.Informer().RunWithContext(ctx)
	if err := reporter.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	objs, err := gi.Informer().GetIndexer().ByIndex("app", "x")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 {
		t.Fatalf("index app=x holds %d objects, want 2", len(objs))
	}
}

// WaitForSync names a GVR requested after Start.
func TestWaitForSyncNamesUnstarted(t *testing.T) {
	f := metadatainformer.NewSharedInformerFactory(fakeClient(), 0)
	f.ForResource(pods)
	err := f.WaitForSync(t.Context())
	if !errors.Is(err, cache.ErrNotSynced) || !strings.Contains(err.Error(), pods.String()) {
		t.Fatalf("WaitForSync with an unstarted informer: %v", err)
	}
}

// Once the factory's informers have stopped, WaitForSync returns without
// waiting for its context, naming the GVR, ErrStopped and the LIST's
// error.
func TestWaitForSyncReturnsOnceStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := fakeClient()
		c.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(pods.GroupResource(), "", errors.New("no"))
		})
		f := metadatainformer.NewSharedInformerFactory(c, 0)
		inf := f.ForResource(pods).Informer()
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
			if !errors.Is(err, cache.ErrNotSynced) || !errors.Is(err, cache.ErrStopped) || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), pods.String()) {
				t.Fatalf("WaitForSync = %v; want the pods named, stopped and forbidden", err)
			}
		default:
			t.Fatal("WaitForSync still waits after Shutdown")
		}
		if h := inf.(cache.InformerHealthReporter).Health(); h.Reflector.State != cache.Stopped || h.Reflector.HasSynced {
			t.Fatalf("health after Shutdown: %v; want Stopped, never synced", h.Reflector)
		}
	})
}

// The default resync period reaches the informers, and Shutdown waits
// for them (synctest's clock; the bubble ends with no goroutine left).
func TestResyncAndShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := metadatainformer.NewSharedInformerFactory(fakeClient(podMeta("a", "one", nil)), time.Minute)
		var updates atomic.Int64
		if _, err := f.ForResource(pods).Informer().AddEventHandler(clientgocache.ResourceEventHandlerFuncs{UpdateFunc: func(_, _ any) { updates.Add(1) }}); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		f.Start(stop)
		if err := f.WaitForSync(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if updates.Load() == 0 {
			t.Error("no resync within two resync periods")
		}
		close(stop)
		f.Shutdown()
	})
}
