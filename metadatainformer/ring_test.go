package metadatainformer_test

import (
	"context"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/kreflector/cache/cachetest"
	"github.com/kreflector/cache/metadatainformer"
	"github.com/kreflector/cache/ring"
)

// WithNewInformer makes the metadata factory's informers ring informers,
// in the one line the docs give: with the ring's only member, the
// informer caches the namespace's Pods' metadata and the factory's
// WaitForSync waits for the ring to form.
func TestMetadataFactoryOnARing(t *testing.T) {
	srv, _ := podServer(t, cachetest.Type{Group: "coordination.k8s.io", Resource: "leases", Object: &coordinationv1.Lease{}, List: &coordinationv1.LeaseList{}})
	client := metadata.NewForConfigOrDie(srv.RESTConfig())
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	r, err := ring.New(ring.Config{Client: cs.CoordinationV1(), Namespace: "ring", Name: "metadata", Identity: "only",
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond, Buckets: 16})
	if err != nil {
		t.Fatal(err)
	}
	f := metadatainformer.NewSharedInformerFactoryWithOptions(client, 0, metadatainformer.WithNamespace("a"), metadatainformer.WithNewInformer(r.NewInformer))
	gi := f.ForResource(pods)
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
	if k := keys(t, got); !slices.Equal(k, []string{"a/one", "a/two"}) {
		t.Fatalf("cache holds %v, want [a/one a/two]", k)
	}
	if st := r.Status(); !st.Formed() || st.Handling != st.Buckets {
		t.Fatalf("the only member is not handling every bucket: %s", st)
	}
}
