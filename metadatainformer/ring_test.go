package metadatainformer_test

import (
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/kreflector/cache/cachetest"
	"github.com/kreflector/cache/internal/factorytest"
	"github.com/kreflector/cache/metadatainformer"
)

// WithNewInformer makes the metadata factory's informers ring informers,
// in the one line the docs give: with the ring's only member, the
// informer caches the namespace's Pods' metadata and the factory's
// WaitForSync waits for the ring to form.
func TestMetadataFactoryOnARing(t *testing.T) {
	srv, _ := podServer(t, cachetest.Type{Group: "coordination.k8s.io", Resource: "leases", Object: &coordinationv1.Lease{}, List: &coordinationv1.LeaseList{}})
	r := factorytest.Ring(t, kubernetes.NewForConfigOrDie(srv.RESTConfig()), "metadata")
	f := metadatainformer.NewSharedInformerFactoryWithOptions(metadata.NewForConfigOrDie(srv.RESTConfig()), 0,
		metadatainformer.WithNamespace("a"), metadatainformer.WithNewInformer(r.NewInformer))
	gi := f.ForResource(pods)
	factorytest.RingInformer(t, gi)
	factorytest.Start(t, f)
	factorytest.Holds[*metav1.PartialObjectMetadata](t, gi.Lister(), "a/one", "a/two")
	factorytest.HandlesAll(t, r)
}
