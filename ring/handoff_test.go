package ring

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache/shard"
)

// heldInLease reads whether name's Lease records bucket b as held.
func (g *rig) heldInLease(lease string, b int) bool {
	g.t.Helper()
	l, err := g.leases.CoordinationV1().Leases("ring").Get(g.ctx, lease, metav1.GetOptions{})
	if err != nil {
		g.t.Fatal(err)
	}
	s, err := decodeSet(l.Annotations[AnnotationHeld], rigBuckets)
	if err != nil {
		g.t.Fatal(err)
	}
	return s.has(b)
}

// A release stops delivery, waits for the handler call in progress, runs
// the drain hook with the released buckets, and only then records the
// release; the replica taking over waits for that record, and says so.
func TestReleaseWaitsForTheHandlerAndTheDrain(t *testing.T) {
	inBubble(t, func(t *testing.T, ctx context.Context) {
		g := newRig(t, ctx, 200)
		blocked, unblock := make(chan string, 1), make(chan struct{})
		var victim string
		var mu sync.Mutex
		var drained []shard.Shard
		h := clientgocache.ResourceEventHandlerFuncs{UpdateFunc: func(_, obj interface{}) {
			if objName(obj.(runtime.Object)) == victim {
				blocked <- victim
				<-unblock
			}
		}}
		drain := func(cfg *Config) {
			cfg.Drain = func(ctx context.Context, s shard.Shard) error {
				mu.Lock()
				defer mu.Unlock()
				drained = append(drained, s)
				return nil
			}
		}
		a := g.joinWith("a", drain, h)
		g.waitFormed(30 * time.Second)

		// An object of a bucket that moves from a to the newcomer.
		c, err := New(Config{Client: g.leases.CoordinationV1(), Namespace: "ring", Name: "test", Identity: "c", Buckets: rigBuckets})
		if err != nil {
			t.Fatal(err)
		}
		owners := g.owners()
		held := make([]string, rigBuckets)
		for b, o := range owners {
			if o == "a" {
				held[b] = a.ring.LeaseName()
			}
		}
		target := plan([]string{a.ring.LeaseName(), c.LeaseName()}, held)
		var obj runtime.Object
		bucket := -1
		for _, o := range g.objects {
			b, _ := a.ring.bucket(o)
			if target[b] == c.LeaseName() {
				obj, bucket = o, b
				break
			}
		}
		victim = objName(obj)
		if _, err := g.cms.Update(ctx, touch(obj), metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		<-blocked
		g.startRing("c", c)
		g.sampleFor(5 * time.Second)
		if !g.heldInLease(a.ring.LeaseName(), bucket) {
			t.Fatal("a recorded the release while its handler was still working on the bucket")
		}
		if a.ring.Handles(obj) {
			t.Fatal("a still delivers events of a bucket it is releasing")
		}
		s := g.replicas["c"].ring.Status()
		if s.Waiting[a.ring.LeaseName()] == 0 || !strings.Contains(s.String(), "waiting for "+a.ring.LeaseName()+" to release") {
			t.Fatalf("the newcomer does not say what it waits for: %s", s)
		}
		wctx, wcancel := context.WithTimeout(ctx, time.Second)
		err = g.replicas["c"].ring.WaitForSync(wctx)
		wcancel()
		if !errors.Is(err, ErrNotFormed) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "to release") {
			t.Fatalf("WaitForSync while waiting for a release: %v", err)
		}
		if h := g.replicas["c"].inf.Health(); h.Healthy || !errors.Is(h.Gate, ErrNotFormed) || !strings.Contains(h.Gate.Error(), "to release") {
			t.Fatalf("Health while waiting for a release = %+v; want unhealthy, its Gate naming the member", h)
		}
		mu.Lock()
		if len(drained) != 0 {
			t.Fatalf("drained %v before the handler returned", drained)
		}
		mu.Unlock()
		close(unblock)
		g.waitFormed(30 * time.Second)
		mu.Lock()
		got := append([]shard.Shard(nil), drained...)
		mu.Unlock()
		if len(got) == 0 || !got[0].ContainsHash(uint64(bucket)<<58) {
			t.Fatalf("the drain hook was not given the released buckets: %v", got)
		}
		if g.heldInLease(a.ring.LeaseName(), bucket) || !g.replicas["c"].ring.Handles(obj) {
			t.Fatal("the bucket did not move to the newcomer")
		}
		if g.twice > 0 {
			t.Fatalf("%d samples saw an object handled twice", g.twice)
		}
		g.leave("a")
		g.leave("c")
	})
}

func touch(obj runtime.Object) *corev1.ConfigMap {
	cm := obj.(*corev1.ConfigMap).DeepCopy()
	cm.Data = map[string]string{"touched": "yes"}
	cm.ResourceVersion = ""
	return cm
}

// A delete that happens while its bucket changes hands (the old owner has
// closed it, the new one has not opened it) reaches the new owner's
// handler when the bucket opens, and the old owner's never.
func TestDeleteDuringAHandoffReachesTheNewOwner(t *testing.T) {
	inBubble(t, func(t *testing.T, ctx context.Context) {
		g := newRig(t, ctx, 200)
		draining, proceed := make(chan shard.Shard, 1), make(chan struct{})
		var once sync.Once
		drain := func(cfg *Config) {
			cfg.Drain = func(ctx context.Context, s shard.Shard) error {
				once.Do(func() { draining <- s; <-proceed })
				return nil
			}
		}
		var mu sync.Mutex
		deleted := map[string][]string{}
		recorder := func(name string) clientgocache.ResourceEventHandler {
			return clientgocache.ResourceEventHandlerFuncs{DeleteFunc: func(obj interface{}) {
				if t, ok := obj.(clientgocache.DeletedFinalStateUnknown); ok {
					obj = t.Obj
				}
				mu.Lock()
				defer mu.Unlock()
				deleted[name] = append(deleted[name], objName(obj.(runtime.Object)))
			}}
		}
		g.joinWith("a", drain, recorder("a"))
		g.waitFormed(30 * time.Second)
		g.joinWith("c", nil, recorder("c"))
		moving := <-draining // a has closed these buckets; c has them cached
		var victim runtime.Object
		for _, o := range g.objects {
			if b, _ := g.replicas["a"].ring.bucket(o); moving.ContainsHash(uint64(b) << 58) {
				victim = o
				break
			}
		}
		vb, _ := g.replicas["c"].ring.bucket(victim)
		l, err := g.leases.CoordinationV1().Leases("ring").Get(ctx, g.replicas["c"].ring.LeaseName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cached, _ := decodeSet(l.Annotations[AnnotationCached], rigBuckets); !cached.has(vb) {
			t.Fatal("a began releasing a bucket its successor had not cached")
		}
		if _, err := g.cms.Delete(ctx, "ns-"+nsSuffix(victim), objName(victim), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		g.sampleFor(time.Second)
		close(proceed)
		g.objects = slicesDelete(g.objects, victim)
		g.waitFormed(30 * time.Second)
		g.sampleFor(time.Second) // the adds and kept deletes are delivered off the loop
		mu.Lock()
		got := map[string][]string{"a": deleted["a"], "c": deleted["c"]}
		mu.Unlock()
		if len(got["a"]) != 0 || len(got["c"]) != 1 || got["c"][0] != objName(victim) {
			t.Fatalf("deletes delivered: %v, want only c told of %s", got, objName(victim))
		}
		g.leave("a")
		g.leave("c")
	})
}

// nsSuffix returns what follows "ns-" in obj's namespace.
func nsSuffix(obj runtime.Object) string {
	return strings.TrimPrefix(obj.(*corev1.ConfigMap).Namespace, "ns-")
}

func slicesDelete(objs []runtime.Object, gone runtime.Object) []runtime.Object {
	out := objs[:0:0]
	for _, o := range objs {
		if o != gone {
			out = append(out, o)
		}
	}
	return out
}

// A drain hook that fails holds the release back: the buckets stay closed
// (never reopened, so no adds are delivered again) and held, the drain is
// retried, and the handoff completes once it succeeds.
func TestAFailingDrainIsRetriedWithoutReopening(t *testing.T) {
	inBubble(t, func(t *testing.T, ctx context.Context) {
		g := newRig(t, ctx, 200)
		var mu sync.Mutex
		drains, closes, reopens := 0, 0, 0
		configure := func(cfg *Config) {
			cfg.Drain = func(context.Context, shard.Shard) error {
				mu.Lock()
				defer mu.Unlock()
				if drains++; drains <= 3 {
					return errors.New("the workqueue still holds keys")
				}
				return nil
			}
			cfg.OnHandlingChange = func(opened bool, _ shard.Shard) {
				mu.Lock()
				defer mu.Unlock()
				switch {
				case !opened:
					closes++
				case closes > 0:
					reopens++
				}
			}
		}
		g.joinWith("a", configure, nil)
		g.waitFormed(30 * time.Second)
		g.step("join 1→2 with a failing drain", 1.0/2, 3*graceful, func() { g.join("c") })
		mu.Lock()
		d, r := drains, reopens
		mu.Unlock()
		if d < 4 || r > 0 {
			t.Fatalf("drains %d (want ≥ 4: three failures, then success), reopenings after the first close %d (want 0)", d, r)
		}
		if s := g.replicas["a"].ring.Status(); s.LastError == nil || !strings.Contains(s.LastError.Error(), "workqueue still holds keys") {
			t.Fatalf("the drain's failure is not in the status: %s", s)
		}
		g.leaveAll()
	})
}
