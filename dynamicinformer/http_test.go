package dynamicinformer_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/kreflector/cache/cachetest"
	"github.com/kreflector/cache/dynamicinformer"
	"github.com/kreflector/cache/internal/factorytest"
)

// Over HTTP with a real dynamic client (cachetest's API server serving a
// custom resource): the namespace reaches the server and the cache syncs.
func TestDynamicFactoryOverHTTP(t *testing.T) {
	srv := widgetServer(t)
	client, err := dynamic.NewForConfig(srv.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, "a", nil)
	lister := f.ForResource(widgets).Lister()
	factorytest.Start(t, f)
	factorytest.Holds[*unstructured.Unstructured](t, lister, "a/one", "a/two")
}

// widgetServer serves widgets a/one, a/two and b/three over HTTP, and the
// other types given.
func widgetServer(t *testing.T, others ...cachetest.Type) *cachetest.Server {
	t.Helper()
	srv := cachetest.NewServer(cachetest.Options{})
	t.Cleanup(srv.Close)
	res := srv.Resource(cachetest.Type{Resource: "widgets", Object: widget("", "", nil)})
	for _, o := range others {
		srv.Resource(o)
	}
	srv.Start()
	for _, w := range []string{"a/one", "a/two", "b/three"} {
		if _, err := res.Create(t.Context(), widget(w[:1], w[2:], nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return srv
}
