package dynamicinformer_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/cachetest"
	"github.com/kreflector/cache/dynamicinformer"
	"github.com/kreflector/cache/internal/factorytest"
	"github.com/kreflector/cache/ring"
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

// On a ring whose Leases are forbidden the dynamic factory's WaitForSync
// says so: it wraps the ring's cause (apierrors.IsForbidden) and
// ring.ErrNotFormed.
func TestDynamicFactoryOnAForbiddenRingSaysWhy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		leases := fake.NewClientset()
		leases.PrependReactor("*", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(coordinationv1.Resource("leases"), "", errors.New("RBAC: access denied"))
		})
		r, err := ring.New(ring.Config{Client: leases.CoordinationV1(), Namespace: "ring", Name: "forbidden", Identity: "a", Buckets: 16})
		if err != nil {
			t.Fatal(err)
		}
		ran := make(chan error, 1)
		go func() { ran <- r.Run(ctx) }()
		f := dynamicinformer.NewDynamicSharedInformerFactoryWithOptions(fakeClient(widget("a", "one", nil)), 0, dynamicinformer.WithNewInformer(r.NewInformer))
		f.ForResource(widgets)
		fctx, stop := context.WithCancel(ctx)
		f.Start(fctx.Done())
		time.Sleep(10 * time.Second) // synctest's clock: rounds of the ring fail meanwhile
		wctx, wcancel := context.WithTimeout(ctx, time.Second)
		err = f.WaitForSync(wctx)
		wcancel()
		if !apierrors.IsForbidden(err) || !errors.Is(err, ring.ErrNotFormed) || !errors.Is(err, cache.ErrNotSynced) || !strings.Contains(err.Error(), "access denied") {
			t.Errorf("WaitForSync = %v; want ErrNotFormed, ErrNotSynced and the forbidden Lease error", err)
		}
		stop()
		f.Shutdown()
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}
