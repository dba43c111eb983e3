package dynamicinformer_test

import (
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kreflector/cache/cachetest"
	"github.com/kreflector/cache/dynamicinformer"
	"github.com/kreflector/cache/internal/factorytest"
)

// WithNewInformer makes the dynamic factory's informers ring informers:
// with the ring's only member, the informer caches the namespace's
// objects and the factory's WaitForSync waits for the ring to form.
func TestDynamicFactoryOnARing(t *testing.T) {
	srv := widgetServer(t, cachetest.Type{Group: "coordination.k8s.io", Resource: "leases", Object: &coordinationv1.Lease{}, List: &coordinationv1.LeaseList{}})
	r := factorytest.Ring(t, kubernetes.NewForConfigOrDie(srv.RESTConfig()), "dynamic")
	f := dynamicinformer.NewDynamicSharedInformerFactoryWithOptions(dynamic.NewForConfigOrDie(srv.RESTConfig()), 0,
		dynamicinformer.WithNamespace("a"), dynamicinformer.WithNewInformer(r.NewInformer))
	gi := f.ForResource(widgets)
	factorytest.RingInformer(t, gi)
	factorytest.Start(t, f)
	factorytest.Holds[*unstructured.Unstructured](t, gi.Lister(), "a/one", "a/two")
	factorytest.HandlesAll(t, r)
}
