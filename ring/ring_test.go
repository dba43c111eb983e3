package ring

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kreflector/cache/shard"
)

// waitFormed waits until every replica handles what the ring plans for it,
// sampling meanwhile.
func (g *rig) waitFormed(within time.Duration) {
	g.t.Helper()
	for waited := time.Duration(0); ; waited += tick {
		all := true
		g.mu.Lock()
		for _, rp := range g.replicas {
			if !rp.ring.Status().Formed() {
				all = false
			}
		}
		g.mu.Unlock()
		total := 0
		for _, n := range g.handlers() {
			total += n
		}
		if all && total == len(g.objects) {
			return
		}
		if waited > within {
			for _, rp := range g.replicas {
				g.t.Logf("%s", rp.ring.Status())
			}
			g.t.Fatalf("not formed within %v", within)
		}
		g.sampleFor(tick)
	}
}

func TestRingScalesWithoutOverlapOrGap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		g := newRig(t, ctx, 400)
		g.join("a")
		g.join("b")
		g.join("c")
		g.waitFormed(30 * time.Second)
		t.Logf("formed: %v", g.handlers())
		g.join("d")
		g.join("e")
		g.waitFormed(30 * time.Second)
		t.Logf("five: %v, longest unowned %v", g.handlers(), g.longest)
		g.leave("a")
		g.waitFormed(30 * time.Second)
		t.Logf("after leave: %v, longest unowned %v", g.handlers(), g.longest)
		g.kill("b")
		g.waitFormed(60 * time.Second)
		t.Logf("after kill: %v, longest unowned %v", g.handlers(), g.longest)
		if g.twice > 0 {
			t.Fatalf("%d samples saw an object handled by two replicas", g.twice)
		}
		for _, n := range []string{"c", "d", "e"} {
			g.leave(n)
		}
	})
}

// appliedButFailed passes Lease calls on, but once armed, the first update
// that drops buckets from the Lease (a release) is applied and then
// reported failed, as a write whose response is lost or timed out is.
type appliedButFailed struct {
	coordinationv1client.LeaseInterface
	armed *bool
	n     int
}

func (a appliedButFailed) Update(ctx context.Context, l *coordinationv1.Lease, o metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	old, err := a.LeaseInterface.Get(ctx, l.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	before, _ := decodeSet(old.Annotations[AnnotationHeld], a.n)
	after, _ := decodeSet(l.Annotations[AnnotationHeld], a.n)
	got, err := a.LeaseInterface.Update(ctx, l, o)
	if err == nil && *a.armed && after.len() < before.len() {
		*a.armed = false
		return nil, apierrors.NewTimeoutError("the response was lost", 1)
	}
	return got, err
}

type appliedButFailedGetter struct {
	c     coordinationv1client.LeasesGetter
	armed *bool
	n     int
}

func (g appliedButFailedGetter) Leases(ns string) coordinationv1client.LeaseInterface {
	return appliedButFailed{LeaseInterface: g.c.Leases(ns), armed: g.armed, n: g.n}
}

// A release whose write was applied but reported failed must not leave the
// released buckets looking like claims: the next round's verify would open
// them again while this replica's Lease says they are free, for another
// replica to claim and open too.
func TestFailedReleaseWriteDoesNotReopen(t *testing.T) {
	const n = 16
	clk := testingclock.NewFakeClock(time.Now())
	cs := fake.NewClientset()
	armed := false
	var me *Ring
	var opened []set
	cfg := Config{
		Client: appliedButFailedGetter{c: cs.CoordinationV1(), armed: &armed, n: n}, Namespace: "ns", Name: "r", Identity: "me",
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond, Buckets: n, Clock: clk,
		OnHandlingChange: func(open bool, _ shard.Shard) {
			if open {
				opened = append(opened, me.gate.snapshot(n))
			}
		},
	}
	me, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	me.fence = startFencer(clk, func() {})
	defer me.fence.stop()
	ctx := t.Context()
	st := &state{held: newSet(n)}
	round := func() {
		me.round(ctx, st)
		clk.Step(me.cfg.RetryPeriod / 4)
	}
	// Alone: claim every bucket, then open them.
	round()
	round()
	if got := me.gate.snapshot(n).len(); got != n {
		t.Fatalf("alone, handling %d buckets, want %d", got, n)
	}
	// Another member joins holding nothing: half is released, and the
	// release's write is applied but reported failed.
	ocfg := cfg
	ocfg.Identity, ocfg.Client, ocfg.OnHandlingChange = "other", cs.CoordinationV1(), nil
	other, err := New(ocfg)
	if err != nil {
		t.Fatal(err)
	}
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: other.lease, Namespace: "ns"}}
	other.writeLease(l, clk.Now(), newSet(n), false)
	if _, err := cs.CoordinationV1().Leases("ns").Create(ctx, l, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	armed = true
	opened = nil
	for range 4 {
		round()
	}
	if armed {
		t.Fatal("no release was written")
	}
	stored, err := cs.CoordinationV1().Leases("ns").Get(ctx, me.lease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	held, _ := decodeSet(stored.Annotations[AnnotationHeld], n)
	for _, o := range opened {
		if extra := o.minus(held); extra.len() > 0 {
			t.Errorf("opened %d buckets its Lease does not hold (they were released): %v", extra.len(), extra.list())
		}
	}
	if got := me.gate.snapshot(n); !got.equal(held) {
		t.Errorf("handling %v, the Lease holds %v", got.list(), held.list())
	}
}
