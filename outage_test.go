package cache_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/cachetest"
)

// healthAt is a health change and when (since the test began) it came.
type healthAt struct {
	h  cache.Health
	at time.Duration
}

// The outage on cachetest's server, on synctest's clock: the
// watch hangs (a dead connection the client does not notice) while the
// server moves on and compacts; when the watch finally ends, the re-watch
// gets 410 and the relist is slow (the server delays every LIST by 40 s).
// Health goes Degraded(WatchFailing) a grace period into the relist, with
// the LIST still in flight, and Synced when it completes, with the store
// equal to the server's state.
func TestHealthDuringSlowRelistAfterCompaction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := cachetest.NewServer(cachetest.Options{})
		defer srv.Close()
		cms := srv.Resource(cachetest.Type{Resource: "configmaps", Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}})
		seed := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "seed"}}
		if _, err := cms.Create(t.Context(), seed, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		store := cache.NewStore(cache.MetaNamespaceKeyFunc)
		start := time.Now()
		var changes []healthAt
		r := cache.NewReflectorWithOptions(cms, &corev1.ConfigMap{}, store, cache.ReflectorOptions{
			Rand:           rand.New(rand.NewPCG(3, 3)),
			UseWatchList:   ptr.To(false),
			OnHealthChange: func(h cache.Health) { changes = append(changes, healthAt{h, time.Since(start)}) },
		})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { r.RunWithContext(ctx); close(done) }()
		defer func() { cancel(); <-done }()
		if err := r.WaitForSync(ctx); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		srv.HangWatches()
		for _, name := range []string{"a", "b", "c"} {
			if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := srv.Compact(srv.ResourceVersion()); err != nil {
			t.Fatal(err)
		}
		srv.Delay(cachetest.VerbList, 40*time.Second)
		// Hung longer than the grace period, so its end is not taken for a
		// watch that came back empty: what follows is the 410's doing.
		time.Sleep(30 * time.Second)
		cut := time.Since(start)
		srv.CloseWatches()
		time.Sleep(20 * time.Second)
		synctest.Wait()
		if h := r.Health(); h.State != cache.Degraded || h.Reason != cache.ReasonWatchFailing {
			t.Fatalf("20 s into a 40 s relist after a 410, health is %v(%s), want Degraded(WatchFailing); changes %v", h.State, h.Reason, changes)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if h := r.Health(); h.State != cache.Synced {
			t.Fatalf("after the relist, health is %v(%s): %v", h.State, h.Reason, h.LastError)
		}
		if n := r.Stats().WatchEnds[cache.WatchExpired]; n != 1 {
			t.Fatalf("%d watches ended expired, want the re-watch's 410", n)
		}
		objs, _ := cms.Objects()
		if d := cachetest.Compare(objs, store.List()); !d.Empty() {
			t.Fatalf("store after the relist: %s", d)
		}
		var degradedAt time.Duration
		for _, c := range changes {
			if c.h.State == cache.Degraded {
				degradedAt = c.at - cut
				break
			}
		}
		// The relist starts after the first backoff (0.8-1.6 s); the loss
		// starts at the 410 and is reported a grace period (10 s) later.
		if degradedAt < 10*time.Second || degradedAt > 12*time.Second {
			t.Fatalf("Degraded %v after the watch was cut, want about 10 s (the grace period); changes %v", degradedAt, changes)
		}
	})
}
