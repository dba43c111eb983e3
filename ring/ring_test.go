package ring

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kreflector/cache/shard"
)

// waitFormed waits until every replica handles what the ring plans for it
// and every object has a handler, sampling meanwhile.
func (g *rig) waitFormed(within time.Duration) {
	g.t.Helper()
	for waited := time.Duration(0); ; waited += tick {
		if g.formed() {
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

func (g *rig) formed() bool {
	g.mu.Lock()
	for _, rp := range g.replicas {
		if !rp.ring.Status().Formed() {
			g.mu.Unlock()
			return false
		}
	}
	g.mu.Unlock()
	total := 0
	for _, n := range g.handlers() {
		total += n
	}
	return total == len(g.objects)
}

// owners returns the replica handling each bucket now ("" for none).
func (g *rig) owners() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]string, rigBuckets)
	for name, rp := range g.replicas {
		for _, b := range rp.ring.gate.snapshot(rigBuckets).list() {
			out[b] = name
		}
	}
	return out
}

// step runs change, waits until the ring has formed again, and checks
// that no object was handled twice, that none went without a handler for
// longer than bound, and that at most 1.25 times the ideal share of the
// buckets moved.
func (g *rig) step(what string, ideal float64, bound time.Duration, change func()) {
	g.t.Helper()
	before := g.owners()
	g.longest = 0
	change()
	g.waitFormed(time.Minute)
	// Adds are delivered off the ring's loop; a leaver's informers stop
	// with it, so its successors replay first (up to replayTimeout).
	g.sampleFor(replayTimeout + time.Second)
	after := g.owners()
	share := float64(moved(before, after)) / rigBuckets
	g.t.Logf("%s: handling %v, longest without a handler %v, %.3f of the buckets moved (ideal %.3f)", what, g.handlers(), g.longest, share, ideal)
	if g.twice > 0 {
		g.t.Fatalf("%s: %d samples saw an object handled by two replicas", what, g.twice)
	}
	if g.longest > bound {
		g.t.Fatalf("%s: an object went %v without a handler, more than %v", what, g.longest, bound)
	}
	if share > 1.25*ideal {
		g.t.Fatalf("%s: %.3f of the buckets moved, more than 1.25 × %.3f", what, share, ideal)
	}
	g.checkAdds(what)
}

// checkAdds checks that every replica's handler was given an add for each
// object it handles: from its informer's initial list or on acquiring.
func (g *rig) checkAdds(what string) {
	g.t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	for name, rp := range g.replicas {
		rp.mu.Lock()
		for _, obj := range g.objects {
			if rp.ring.Handles(obj) && rp.adds[objName(obj)] == 0 {
				g.t.Errorf("%s: %s handles %s but its handler never got an add for it", what, name, objName(obj))
			}
		}
		rp.mu.Unlock()
	}
}

const graceful = 5 * time.Second

func TestRingScalesWithoutOverlapOrGap(t *testing.T) {
	inBubble(t, func(t *testing.T, ctx context.Context) {
		g := newRig(t, ctx, 400)
		g.join("a")
		g.join("b")
		g.join("c")
		g.waitFormed(30 * time.Second)
		g.step("join 3→4", 1.0/4, graceful, func() { g.join("d") })
		g.step("join 4→5", 1.0/5, graceful, func() { g.join("e") })
		g.step("leave 5→4", 1.0/5, graceful, func() { g.leave("a") })
		g.step("leave 4→3", 1.0/4, graceful, func() { g.leave("b") })
		g.step("kill 3→2", 1.0/3, DefaultLeaseDuration+graceful, func() { g.kill("c") })
		g.leaveAll()
	})
}

// A replica whose connection goes silent for longer than its Lease stops
// handling at its renew deadline, before the others take over at the
// Lease's expiry, and rejoins once the connection is back.
func TestRingFencesABlackHoledReplica(t *testing.T) {
	inBubble(t, func(t *testing.T, ctx context.Context) {
		g := newRig(t, ctx, 300)
		g.joinAll("a", "b", "c")
		g.waitFormed(30 * time.Second)
		b := g.replicas["b"]
		g.step("black hole", 1.0/3, DefaultLeaseDuration+graceful, func() {
			b.holes.set(true)
			g.sampleFor(DefaultLeaseDuration + 10*time.Second)
			if s := b.ring.Status(); s.Handling != 0 || !s.Fenced {
				t.Fatalf("black-holed replica still handles: %s", s)
			}
			g.mu.Lock()
			delete(g.replicas, "b") // the ring formed without it
			g.mu.Unlock()
		})
		g.mu.Lock()
		g.replicas["b"] = b
		g.mu.Unlock()
		g.step("back", 1.0/3, graceful, func() { b.holes.set(false) })
		g.leaveAll()
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
		Client: wrapLeases(cs.CoordinationV1(), func(l coordinationv1client.LeaseInterface) coordinationv1client.LeaseInterface {
			return appliedButFailed{LeaseInterface: l, armed: &armed, n: n}
		}), Namespace: "ns", Name: "r", Identity: "me",
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
	st := me.newState()
	round := func() {
		me.round(ctx, st)
		clk.Step(me.cfg.RetryPeriod / 4)
	}
	// Alone: become ready, claim every bucket, then open them.
	round()
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
	other.writeLease(l, clk.Now(), published{held: newSet(n), cached: fullSet(n), ready: true}) // it has cached everything: the release may go ahead
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
