package cachetest_test

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/cachetest"
)

// ourConfigMapInformer is what a program registers with client-go's
// SharedInformerFactory.InformerFor to have ConfigMaps served by
// kreflector's informer.
func ourConfigMapInformer(cs kubernetes.Interface, resync time.Duration) clientgocache.SharedIndexInformer {
	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", metav1.NamespaceAll, fields.Everything())
	return cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
}

// Registered with InformerFor before the typed informer is asked for,
// our informer is the one client-go's typed informer and lister use.
func TestFactoryInformerForUsesOurInformer(t *testing.T) {
	_, cms, cs := startHTTP(t, cachetest.Options{})
	ctx := bounded(t)
	create(t, cms, "ns/a", "ns/b", "other/c")
	factory := informers.NewSharedInformerFactory(cs, 0)
	ours := factory.InformerFor(&corev1.ConfigMap{}, ourConfigMapInformer)
	if _, isOurs := ours.(cache.InformerHealthReporter); !isOurs {
		t.Fatalf("InformerFor returned %T, not kreflector's informer", ours)
	}
	// client-go's typed informer wraps the registered one; both serve the
	// same indexer, which the typed lister reads.
	typed := factory.Core().V1().ConfigMaps()
	if typed.Informer().GetIndexer() != ours.GetIndexer() {
		t.Fatalf("the typed informer (%T) does not serve our informer's indexer", typed.Informer())
	}
	lister := typed.Lister()
	stop := make(chan struct{})
	factory.Start(stop)
	defer func() {
		close(stop)
		factory.Shutdown() // waits for the informers to return
	}()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("%v did not sync", typ)
		}
	}
	listed := func() []string {
		got, err := lister.ConfigMaps("ns").List(labels.Everything())
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, c := range got {
			names = append(names, c.Name)
		}
		slices.Sort(names)
		return names
	}
	if got := listed(); !equal(got, []string{"a", "b"}) {
		t.Fatalf("lister in ns after sync: %v, want [a b]", got)
	}
	create(t, cms, "ns/d")
	eventually(ctx, t, "the lister to see ns/d", func() bool { return equal(listed(), []string{"a", "b", "d"}) })
}
