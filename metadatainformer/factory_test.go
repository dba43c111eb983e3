package metadatainformer_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/metadata/metadatalister"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/internal/factorytest"
	"github.com/kreflector/cache/metadatainformer"
)

var pods = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

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

// The filtered factory's namespace and tweak select what is cached (the
// tweak reaches LIST and WATCH alike); its informers are ours, one per
// GVR, with client-go's metadata lister, whose values are client-go's.
func TestFilteredFactory(t *testing.T) {
	x := map[string]string{"app": "x"}
	client := fakeClient(podMeta("a", "keep", x), podMeta("a", "drop", map[string]string{"app": "y"}), podMeta("b", "other", x))
	f := metadatainformer.NewFilteredSharedInformerFactory(client, 0, "a", func(o *metav1.ListOptions) { o.LabelSelector = "app=x" })
	gi, reporter := factorytest.Ours(t, f, pods)
	factorytest.Start(t, f)
	factorytest.Holds[*metav1.PartialObjectMetadata](t, gi.Lister(), "a/keep")
	var lister metadatalister.Lister = metadatalister.New(gi.Informer().GetIndexer(), pods)
	if m, err := lister.Namespace("a").Get("keep"); err != nil || m.Labels["app"] != "x" {
		t.Fatalf("client-go's lister over our indexer: %v, %v", m, err)
	}
	factorytest.Synced(t, f, reporter)
	// The watch opens after the LIST: wait for it.
	want := []string{"list a app=x", "watch a app=x"}
	factorytest.Eventually(t, func() string {
		if calls := listsAndWatches(client); !slices.Equal(calls, want) {
			return fmt.Sprintf("calls %v; want %v", calls, want)
		}
		return ""
	})
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
	factorytest.Start(t, f)
	created := podMeta("b", "two", map[string]string{"late": "yes"})
	if _, err := client.Resource(pods).Namespace("b").(metadatafake.MetadataClient).CreateFake(created, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	factorytest.Eventually(t, func() string {
		obj, err := gi.Lister().ByNamespace("b").Get("two")
		if err != nil {
			return "the created object never reached the cache: " + err.Error()
		}
		if m := obj.(*metav1.PartialObjectMetadata); m.Labels["late"] != "yes" {
			return fmt.Sprintf("cached %v", m)
		}
		return ""
	})
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
	factorytest.Start(t, f)
	got := factorytest.Holds[*metav1.PartialObjectMetadata](t, gi.Lister(), "a/one")
	if got[0].Annotations["seen"] != "transform" || transformed.Load() == 0 {
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
	ctx, cancel := context.WithTimeout(t.Context(), factorytest.WaitLimit)
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

// The default resync period reaches the informers, and Shutdown waits
// for them.
func TestResyncAndShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		factorytest.ResyncsAndShutsDown(t, metadatainformer.NewSharedInformerFactory(fakeClient(podMeta("a", "one", nil)), time.Minute), pods)
	})
}

// WaitForSync names a GVR requested after Start.
func TestWaitForSyncNamesUnstarted(t *testing.T) {
	factorytest.NamesUnstarted(t, metadatainformer.NewSharedInformerFactory(fakeClient(), 0), pods)
}

// Once the factory's informers have stopped, WaitForSync returns without
// waiting for its context, naming the GVR, ErrStopped and the LIST's
// error; the informer's Health says Stopped.
func TestWaitForSyncReturnsOnceStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := fakeClient()
		c.PrependReactor("list", "pods", factorytest.Forbidden(pods))
		factorytest.StoppedUnsynced(t, metadatainformer.NewSharedInformerFactory(c, 0), pods)
	})
}

// WithReflectorOptions reaches the factory's informers: with Compact,
// they hold PartialObjectMetadata as bytes and read them back equal.
func TestCompactFactory(t *testing.T) {
	client := fakeClient(podMeta("a", "one", map[string]string{"app": "x"}), podMeta("b", "two", nil))
	compact := metadatainformer.NewSharedInformerFactoryWithOptions(client, 0, metadatainformer.WithReflectorOptions(cache.ReflectorOptions{Compact: &cache.CompactOptions{}}))
	plain := metadatainformer.NewSharedInformerFactory(client, 0)
	gi, reporter := factorytest.Ours(t, compact, pods)
	want := plain.ForResource(pods)
	factorytest.Start(t, compact)
	factorytest.Start(t, plain)
	factorytest.Compact(t, reporter, gi.Lister(), want.Lister(), "a/one", "b/two")
}
