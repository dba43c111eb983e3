package informers_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/cachetest"
	"github.com/kreflector/cache/informers"
	"github.com/kreflector/cache/ring"
)

// ringReplica is one replica of TestFactoryOnARing: its ring, its factory
// and the names its ConfigMap handler was given.
type ringReplica struct {
	ring *ring.Ring
	f    informers.SharedInformerFactory
	inf  clientgocache.SharedIndexInformer

	mu   sync.Mutex
	seen map[string]bool
}

// One option makes every informer of a factory a ring informer: two
// replicas over HTTP split the ConfigMaps, each object handled by exactly
// one of them, each handler given every object its replica handles; the
// factory's WaitForSync (which waits for the ring too) and Health work on
// ring informers.
func TestFactoryOnARing(t *testing.T) {
	srv := cachetest.NewServer(cachetest.Options{})
	t.Cleanup(srv.Close)
	cms := srv.Resource(cachetest.Type{Resource: "configmaps", Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}})
	srv.Resource(cachetest.Type{Group: "coordination.k8s.io", Resource: "leases", Object: &coordinationv1.Lease{}, List: &coordinationv1.LeaseList{}})
	srv.Start()
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	var objs []*corev1.ConfigMap
	for i := range 60 {
		obj, err := cms.Create(ctx, configMap("team", fmt.Sprintf("cm-%02d", i)), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, obj.(*corev1.ConfigMap))
	}
	var replicas []*ringReplica
	var running sync.WaitGroup
	t.Cleanup(running.Wait)
	for _, id := range []string{"a", "b"} {
		cs, err := kubernetes.NewForConfig(srv.RESTConfig())
		if err != nil {
			t.Fatal(err)
		}
		r, err := ring.New(ring.Config{Client: cs.CoordinationV1(), Namespace: "ring", Name: "factory", Identity: id,
			LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond, Buckets: 64})
		if err != nil {
			t.Fatal(err)
		}
		f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNewInformer(r.NewInformer))
		rp := &ringReplica{ring: r, f: f, inf: f.Core().V1().ConfigMaps().Informer(), seen: map[string]bool{}}
		if _, ok := rp.inf.(*ring.Informer); !ok {
			t.Fatalf("the factory's informer is a %T, not a ring informer", rp.inf)
		}
		if _, err := rp.inf.AddEventHandler(clientgocache.ResourceEventHandlerFuncs{AddFunc: func(obj interface{}) {
			rp.mu.Lock()
			defer rp.mu.Unlock()
			rp.seen[obj.(*corev1.ConfigMap).Name] = true
		}}); err != nil {
			t.Fatal(err)
		}
		rctx, stop := context.WithCancel(context.Background())
		running.Go(func() { _ = r.Run(rctx) })
		t.Cleanup(func() { stop(); f.Shutdown() })
		f.StartWithContext(rctx)
		replicas = append(replicas, rp)
	}
	for _, rp := range replicas {
		if err := rp.f.WaitForSync(ctx); err != nil {
			t.Fatalf("WaitForSync: %v", err)
		}
	}
	poll(ctx, t, "the ring to split the ConfigMaps between both replicas", func() bool {
		for _, rp := range replicas {
			if st := rp.ring.Status(); !st.Formed() || st.Members != 2 {
				return false
			}
		}
		for _, obj := range objs {
			n := 0
			for _, rp := range replicas {
				if rp.ring.Handles(obj) {
					n++
					rp.mu.Lock()
					seen := rp.seen[obj.Name]
					rp.mu.Unlock()
					if !seen {
						return false
					}
				}
			}
			if n != 1 {
				return false
			}
		}
		return true
	})
	for _, rp := range replicas {
		if st := rp.ring.Status(); st.Handling == 0 || st.Handling == st.Buckets {
			t.Errorf("%s handles %d of %d buckets: not a share", st.Identity, st.Handling, st.Buckets)
		}
		// Formed, each replica is healthy (while a replica waits for the
		// other to release, Health's Gate says so).
		if h := rp.f.Health()[reflect.TypeFor[*corev1.ConfigMap]()]; !h.Healthy || h.Gate != nil {
			t.Errorf("Health of the ring informer: %+v", h)
		}
	}
}

// A factory whose informers are a ring's says why they cannot sync when
// the ring cannot work: its WaitForSync and Health carry the ring's
// cause, the forbidden Lease error (apierrors.IsForbidden), or that the
// ring's Run was never called.
func TestFactoryOnARingThatCannotWorkSaysWhy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		leases := fake.NewClientset()
		leases.PrependReactor("*", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(coordinationv1.Resource("leases"), "", errors.New("RBAC: access denied"))
		})
		forbidden, err := ring.New(ring.Config{Client: leases.CoordinationV1(), Namespace: "ring", Name: "forbidden", Identity: "a", Buckets: 16})
		if err != nil {
			t.Fatal(err)
		}
		idle, err := ring.New(ring.Config{Client: leases.CoordinationV1(), Namespace: "ring", Name: "idle", Identity: "a", Buckets: 16})
		if err != nil {
			t.Fatal(err)
		}
		ran := make(chan error, 1)
		go func() { ran <- forbidden.Run(ctx) }()
		for _, tc := range []struct {
			r    *ring.Ring
			is   func(error) bool
			says string
		}{
			{forbidden, apierrors.IsForbidden, "access denied"},
			{idle, func(error) bool { return true }, "Ring.Run has not been called"},
		} {
			f := informers.NewSharedInformerFactoryWithOptions(fake.NewClientset(configMap("a", "x")), 0, informers.WithNewInformer(tc.r.NewInformer))
			f.Core().V1().ConfigMaps().Informer()
			fctx, stop := context.WithCancel(ctx)
			f.StartWithContext(fctx)
			time.Sleep(10 * time.Second) // synctest's clock: rounds of the ring fail meanwhile
			wctx, wcancel := context.WithTimeout(ctx, time.Second)
			err := f.WaitForSync(wctx)
			wcancel()
			if !tc.is(err) || !errors.Is(err, ring.ErrNotFormed) || !errors.Is(err, cache.ErrNotSynced) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("WaitForSync = %v; want ErrNotFormed, ErrNotSynced and the ring's cause, saying %q", err, tc.says)
			}
			h := f.Health()[reflect.TypeFor[*corev1.ConfigMap]()]
			if h.Healthy || !tc.is(h.Gate) || !errors.Is(h.Gate, ring.ErrNotFormed) || !strings.Contains(h.Gate.Error(), tc.says) {
				t.Errorf("Health = %+v; want unhealthy, its Gate the ring's cause, saying %q", h, tc.says)
			}
			stop()
			f.Shutdown()
		}
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}
