package informers_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clientgocache "k8s.io/client-go/tools/cache"

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
		if h := rp.f.Health()[reflect.TypeFor[*corev1.ConfigMap]()]; !h.Healthy {
			t.Fatalf("Health of the ring informer: %+v", h)
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
	}
}
