package ring

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache/cachetest"
	"github.com/kreflector/cache/shard"
)

// With the namespace key, each namespace's objects are handled by one
// replica, through a join.
func TestRingByNamespaceKeepsANamespaceTogether(t *testing.T) {
	inBubble(t, func(t *testing.T, ctx context.Context) {
		g := newRigWith(t, ctx, 300, cachetest.Options{}, 30)
		byNS := func(c *Config) { c.Key = shard.ByNamespace }
		g.joinWith("a", byNS, nil)
		g.joinWith("b", byNS, nil)
		g.waitFormed(30 * time.Second)
		g.step("join 2→3", 1.0/3, graceful, func() { g.joinWith("c", byNS, nil) })
		handler := map[string]string{}
		for _, obj := range g.objects {
			ns := obj.(interface{ GetNamespace() string }).GetNamespace()
			for name, rp := range g.replicas {
				if rp.ring.Handles(obj) {
					if h, ok := handler[ns]; ok && h != name {
						t.Fatalf("namespace %s is handled by %s and %s", ns, h, name)
					}
					handler[ns] = name
					if !rp.inf.HandlesKey(ns + "/" + objName(obj)) {
						t.Fatalf("%s handles %s/%s but HandlesKey says no", name, ns, objName(obj))
					}
				}
			}
		}
		if counts := g.handlers(); len(counts) != 3 {
			t.Fatalf("not every replica handles a namespace: %v", counts)
		}
		g.leaveAll()
	})
}

// On a server that ignores shard selectors the informers filter locally:
// handling is as exact, and Status says so.
func TestRingOnAServerWithoutTheGateFiltersLocally(t *testing.T) {
	inBubble(t, func(t *testing.T, ctx context.Context) {
		g := newRigWith(t, ctx, 200, cachetest.Options{DisableShardedListAndWatch: true}, 1)
		g.join("a")
		g.join("b")
		g.waitFormed(30 * time.Second)
		g.step("join 2→3", 1.0/3, graceful, func() { g.join("c") })
		// A replica whose shard only shrank (merged, no LIST) learns that
		// the server ignores its selector from the events it must drop.
		for _, o := range g.objects {
			if _, err := g.cms.Update(ctx, touch(o), metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		g.sampleFor(5 * time.Second)
		for name, rp := range g.replicas {
			if s := rp.ring.Status(); s.FilteringLocally != 1 {
				t.Errorf("%s: %s", name, s)
			}
			if n := len(rp.inf.GetStore().List()); n >= len(g.objects) {
				t.Errorf("%s caches %d objects of %d: not filtered", name, n, len(g.objects))
			}
		}
		g.leaveAll()
	})
}

// A Lease left by a replica that died is deleted once it has been expired
// for twice its duration.
func TestRingCollectsDeadMembersLeases(t *testing.T) {
	inBubble(t, func(t *testing.T, ctx context.Context) {
		g := newRig(t, ctx, 50)
		g.join("a")
		b := g.join("b")
		g.waitFormed(30 * time.Second)
		g.kill("b")
		g.sampleFor(3*DefaultLeaseDuration + 5*time.Second)
		if _, err := g.leases.CoordinationV1().Leases("ring").Get(ctx, b.ring.LeaseName(), metav1GetOptions); err == nil {
			t.Fatal("the dead replica's Lease is still there")
		}
		g.leave("a")
	})
}

var metav1GetOptions = metav1.GetOptions{}

// An informer of the ring that has stopped no longer counts: the ring does
// not wait for its cache, and handoffs go on.
func TestRingForgetsAStoppedInformer(t *testing.T) {
	inBubble(t, func(t *testing.T, ctx context.Context) {
		g := newRig(t, ctx, 100)
		g.join("a")
		c := g.join("c")
		extra := c.ring.NewInformer(g.cms.Namespace(""), &corev1.ConfigMap{}, 0, clientgocache.Indexers{})
		ectx, ecancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); extra.RunWithContext(ectx) }()
		g.waitFormed(30 * time.Second)
		ecancel()
		<-done
		g.step("leave 2→1", 1.0/2, graceful, func() { g.leave("a") })
		g.leave("c")
	})
}

// A replica whose informers cannot cache (it may not list, say) never
// becomes ready, so no bucket is planned for it: when another replica
// dies, the ones that can handle take its buckets over.
func TestRingPlansNothingForAReplicaThatCannotCache(t *testing.T) {
	inBubble(t, func(t *testing.T, ctx context.Context) {
		g := newRig(t, ctx, 200)
		g.joinAll("a", "b")
		g.waitFormed(30 * time.Second)
		forbidden := &clientgocache.ListWatch{
			ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
				return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("no RBAC for this version"))
			},
			WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
				return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("no RBAC for this version"))
			},
		}
		x, err := New(Config{Client: g.leases.CoordinationV1(), Namespace: "ring", Name: "test", Identity: "x", Buckets: rigBuckets})
		if err != nil {
			t.Fatal(err)
		}
		broken := g.startRingOn("x", x, forbidden)
		g.mu.Lock()
		delete(g.replicas, "x") // it handles nothing; the ring forms without it
		g.mu.Unlock()
		g.sampleFor(10 * time.Second)
		g.step("kill 2→1 beside a replica that cannot cache", 1.0/2, DefaultLeaseDuration+graceful, func() { g.kill("b") })
		if s := x.Status(); s.Ready || !strings.Contains(s.String(), "not ready") {
			t.Fatalf("the replica that cannot cache: %s", s)
		}
		broken.cancel()
		<-broken.done
		g.leaveAll()
	})
}
