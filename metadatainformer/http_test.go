package metadatainformer_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"

	"github.com/kreflector/cache/cachetest"
	"github.com/kreflector/cache/internal/factorytest"
	"github.com/kreflector/cache/metadatainformer"
)

// Over HTTP with client-go's real metadata client, on cachetest's API
// server (which answers with whole objects, as a server without
// PartialObjectMetadata does: the client keeps their metadata): the
// namespace reaches the server, the cache syncs and a later write
// arrives through the watch.
func TestMetadataFactoryOverHTTP(t *testing.T) {
	srv, res := podServer(t)
	client, err := metadata.NewForConfig(srv.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	f := metadatainformer.NewFilteredSharedInformerFactory(client, 0, "a", nil)
	lister := f.ForResource(pods).Lister()
	factorytest.Start(t, f)
	factorytest.Holds[*metav1.PartialObjectMetadata](t, lister, "a/one", "a/two")
	if _, err := res.Create(t.Context(), pod("a", "three"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	factorytest.Eventually(t, func() string {
		if _, err := lister.ByNamespace("a").Get("three"); err != nil {
			return "a Pod created after the sync never reached the cache: " + err.Error()
		}
		return ""
	})
}

func pod(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "web"}}}
}

// podServer serves Pods a/one, a/two and b/three over HTTP, and the other
// types given.
func podServer(t *testing.T, others ...cachetest.Type) (*cachetest.Server, *cachetest.Resource) {
	t.Helper()
	srv := cachetest.NewServer(cachetest.Options{})
	t.Cleanup(srv.Close)
	res := srv.Resource(cachetest.Type{Resource: "pods", Object: &corev1.Pod{}, List: &corev1.PodList{}})
	for _, o := range others {
		srv.Resource(o)
	}
	srv.Start()
	for _, p := range []string{"a/one", "a/two", "b/three"} {
		if _, err := res.Create(t.Context(), pod(p[:1], p[2:]), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return srv, res
}
