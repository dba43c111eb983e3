package ring

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/cachetest"
)

// A ring informer answers the root informer's health API (the factories
// type-assert cache.InformerHealthReporter), and its WaitForSync waits for
// the ring as well as the cache, naming the ring when it is the cause; a
// ring whose Run was never called says so there, in Health and in Status.
func TestInformerReportsHealthAndWaitsForTheRing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		g := newRig(t, ctx, 50)

		// A ring that never runs: the informer cannot sync, and says why.
		r, err := New(Config{Client: g.leases.CoordinationV1(), Namespace: "ring", Name: "idle", Identity: "x", Buckets: 64})
		if err != nil {
			t.Fatal(err)
		}
		idle := r.NewInformer(g.cms.Namespace("default"), &corev1.ConfigMap{}, 0, clientgocache.Indexers{})
		reporter, ok := idle.(cache.InformerHealthReporter)
		if !ok {
			t.Fatalf("%T is not a cache.InformerHealthReporter", idle)
		}
		if err := reporter.SetHandlerLimits(cache.HandlerLimits{MaxBacklog: 10}); err != nil {
			t.Fatalf("SetHandlerLimits before start: %v", err)
		}
		const never = "Ring.Run has not been called"
		wctx, wcancel := context.WithTimeout(ctx, time.Second)
		err = reporter.WaitForSync(wctx)
		wcancel()
		if !errors.Is(err, ErrNotFormed) || !errors.Is(err, cache.ErrNotSynced) || !strings.Contains(err.Error(), never) {
			t.Fatalf("WaitForSync on a ring that never ran = %v; want ErrNotFormed and ErrNotSynced, saying %q", err, never)
		}
		if h := reporter.Health(); h.Healthy || h.Reflector.State != cache.Syncing || !errors.Is(h.Gate, ErrNotFormed) || !strings.Contains(h.Gate.Error(), never) {
			t.Fatalf("Health of a ring that never ran = %+v; want Syncing and unhealthy, its Gate saying %q", h, never)
		}
		if s := r.Status(); s.Started || !strings.Contains(s.String(), never) {
			t.Fatalf("Status of a ring that never ran = %s; want it to say %q", s, never)
		}
		if strings.Contains(err.Error(), "(of 0)") {
			t.Fatalf("WaitForSync on a ring that never ran = %v; the bucket count is not known before the first read", err)
		}

		rp := g.join("a")
		g.waitFormed(30 * time.Second)
		if err := rp.inf.WaitForSync(ctx); err != nil {
			t.Fatalf("WaitForSync once formed: %v", err)
		}
		if h := rp.inf.Health(); !h.Healthy || h.Reflector.State != cache.Synced {
			t.Fatalf("Health once formed = %+v, want healthy and synced", h)
		}
		if st := rp.inf.Stats(); len(st.Handlers) != 1 {
			t.Fatalf("Stats has %d handlers, want 1", len(st.Handlers))
		}
		if err := rp.inf.SetHandlerLimits(cache.HandlerLimits{}); err == nil {
			t.Fatal("SetHandlerLimits after start succeeded")
		}
		for _, obj := range g.objects {
			if rp.inf.Handles(obj) != rp.ring.Handles(obj) {
				t.Fatal("Informer.Handles disagrees with Ring.Handles")
			}
		}
		g.leave("a")
	})
}

// A ring informer that has stopped without syncing says so at once, even
// while its ring is not formed (here never run): nothing will sync it.
func TestStoppedRingInformerWaitForSyncReturns(t *testing.T) {
	inBubble(t, func(t *testing.T, ctx context.Context) {
		r, err := New(Config{Client: fake.NewClientset().CoordinationV1(), Namespace: "ring", Name: "test", Identity: "a", Buckets: rigBuckets})
		if err != nil {
			t.Fatal(err)
		}
		srv := cachetest.NewServer(cachetest.Options{})
		defer srv.Close()
		cms := srv.Resource(cachetest.Type{Resource: "configmaps", Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}})
		inf := r.NewInformer(cms, &corev1.ConfigMap{}, 0, clientgocache.Indexers{}).(*Informer)
		rctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); inf.RunWithContext(rctx) }()
		synctest.Wait()
		stop()
		<-done
		start := time.Now()
		err = inf.WaitForSync(ctx)
		if !errors.Is(err, cache.ErrStopped) || time.Since(start) != 0 {
			t.Fatalf("WaitForSync after the stop: %v after %v, want cache.ErrStopped at once", err, time.Since(start))
		}
	})
}
