package dynamicinformer_test

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kreflector/cache/cachetest"
	"github.com/kreflector/cache/dynamicinformer"
	"github.com/kreflector/cache/ring"
)

// WithNewInformer makes the dynamic factory's informers ring informers:
// with the ring's only member, the informer caches the namespace's
// objects and the factory's WaitForSync waits for the ring to form.
func TestDynamicFactoryOnARing(t *testing.T) {
	srv := widgetServer(t, cachetest.Type{Group: "coordination.k8s.io", Resource: "leases", Object: &coordinationv1.Lease{}, List: &coordinationv1.LeaseList{}})
	client := dynamic.NewForConfigOrDie(srv.RESTConfig())
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	r, err := ring.New(ring.Config{Client: cs.CoordinationV1(), Namespace: "ring", Name: "dynamic", Identity: "only",
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond, Buckets: 16})
	if err != nil {
		t.Fatal(err)
	}
	f := dynamicinformer.NewDynamicSharedInformerFactoryWithOptions(client, 0, dynamicinformer.WithNamespace("a"), dynamicinformer.WithNewInformer(r.NewInformer))
	gi := f.ForResource(widgets)
	if _, ok := gi.Informer().(*ring.Informer); !ok {
		t.Fatalf("the factory's informer is a %T, not a ring informer", gi.Informer())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	start(t, f)
	got, err := gi.Lister().List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if k := keys(got); len(k) != 2 || k[0] != "a/one" || k[1] != "a/two" {
		t.Fatalf("cache holds %v, want [a/one a/two]", k)
	}
	if st := r.Status(); !st.Formed() || st.Handling != st.Buckets {
		t.Fatalf("the only member is not handling every bucket: %s", st)
	}
}
