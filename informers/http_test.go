package informers_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/cachetest"
	"github.com/kreflector/cache/informers"
)

// Over HTTP with a real Clientset (cachetest's API server): the factory's
// namespace and selector reach the server, the cache follows changes, and
// the informer reports a healthy Reflector.
func TestFactoryOverHTTP(t *testing.T) {
	srv := cachetest.NewServer(cachetest.Options{})
	t.Cleanup(srv.Close)
	cms := srv.Resource(cachetest.Type{Resource: "configmaps", Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}})
	srv.Start()
	cs, err := kubernetes.NewForConfig(srv.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*corev1.ConfigMap{configMap("a", "one", "app", "x"), configMap("a", "skip", "app", "y"), configMap("b", "two", "app", "x")} {
		if _, err := cms.Create(t.Context(), c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("a"),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "app=x" }))
	typed := f.Core().V1().ConfigMaps()
	lister := typed.Lister()
	ctx := start(t, f)
	listed := func() []string {
		got, err := lister.List(labels.Everything())
		if err != nil {
			t.Fatal(err)
		}
		return names(got)
	}
	if got := listed(); !slices.Equal(got, []string{"a/one"}) {
		t.Fatalf("after sync: %v, want [a/one]", got)
	}
	if _, err := cms.Create(t.Context(), configMap("a", "three", "app", "x"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, "the cache to see a/three", func() bool { return slices.Equal(listed(), []string{"a/one", "a/three"}) })
	h := typed.Informer().(cache.InformerHealthReporter).Health()
	if !h.Reflector.HasSynced || h.Reflector.State == cache.Degraded {
		t.Fatalf("Health over HTTP: %+v", h.Reflector)
	}
}
