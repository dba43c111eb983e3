package ring

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// writeLog records, in order, what each write of a replica's Lease that
// succeeded published as held.
type writeLog struct {
	mu   sync.Mutex
	held []set
}

// wrap makes cfg's client record into w.
func (w *writeLog) wrap(cfg *Config) {
	cfg.Client = wrapLeases(cfg.Client, func(l coordinationv1client.LeaseInterface) coordinationv1client.LeaseInterface {
		return loggedLeases{LeaseInterface: l, log: w}
	})
}

func (w *writeLog) add(l *coordinationv1.Lease) {
	s, _ := decodeSet(l.Annotations[AnnotationHeld], rigBuckets)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.held = append(w.held, s)
}

// since returns what the writes from the n-th on published as held.
func (w *writeLog) since(n int) []set {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]set(nil), w.held[n:]...)
}

func (w *writeLog) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.held)
}

type loggedLeases struct {
	coordinationv1client.LeaseInterface
	log *writeLog
}

func (l loggedLeases) Create(ctx context.Context, lease *coordinationv1.Lease, o metav1.CreateOptions) (*coordinationv1.Lease, error) {
	got, err := l.LeaseInterface.Create(ctx, lease, o)
	if err == nil {
		l.log.add(got)
	}
	return got, err
}

func (l loggedLeases) Update(ctx context.Context, lease *coordinationv1.Lease, o metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	got, err := l.LeaseInterface.Update(ctx, lease, o)
	if err == nil {
		l.log.add(got)
	}
	return got, err
}

// storedLease reads the Lease named name, or fails the test.
func (g *rig) lease(name string) *coordinationv1.Lease {
	g.t.Helper()
	l, err := g.leases.CoordinationV1().Leases("ring").Get(g.ctx, name, metav1.GetOptions{})
	if err != nil {
		g.t.Fatal(err)
	}
	return l
}

// editLease changes the Lease named name with edit, through the API, as
// an administrator's kubectl edit does.
func (g *rig) editLease(name string, edit func(*coordinationv1.Lease)) {
	g.t.Helper()
	l := g.lease(name)
	edit(l)
	if _, err := g.leases.CoordinationV1().Leases("ring").Update(g.ctx, l, metav1.UpdateOptions{}); err != nil {
		g.t.Fatal(err)
	}
}

func (g *rig) deleteLease(name string) {
	g.t.Helper()
	if err := g.leases.CoordinationV1().Leases("ring").Delete(g.ctx, name, metav1.DeleteOptions{}); err != nil {
		g.t.Fatal(err)
	}
}

// foreignLease is a ring Lease named name that another holder wrote,
// holding held.
func foreignLease(name string, held set) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ring", Labels: map[string]string{LabelRing: "test"},
			Annotations: map[string]string{AnnotationBuckets: "64", AnnotationHeld: held.encode()}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("intruder"), LeaseDurationSeconds: ptr.To(int32(15))},
	}
}

// pauseFor black-holes rp's Lease calls for d, as a SIGSTOP or a cut-off
// network does, sampling meanwhile, and checks that it stopped handling
// at its renew deadline. lose, if set, runs once the calls hang.
func (g *rig) pauseFor(rp *replica, d time.Duration, lose func()) {
	g.t.Helper()
	rp.holes.set(true)
	if lose != nil {
		lose()
	}
	g.sampleFor(DefaultRenewDeadline + tick)
	if _, handling := rp.ring.Handling(); handling {
		g.t.Fatalf("%s still handles past its renew deadline, cut off: %s", rp.name, rp.ring.Status())
	}
	g.sampleFor(d - DefaultRenewDeadline - tick)
	if g.twice > 0 {
		g.t.Fatalf("while %s was cut off, %d samples saw an object handled by two replicas", rp.name, g.twice)
	}
	rp.holes.set(false)
}

// A way a replica's Lease is lost, and what its Status says of it.
type leaseLoss struct {
	name string
	// kube serves the Leases as kube-apiserver does: an update of a
	// deleted Lease is refused with 409 Conflict, not 404.
	kube bool
	lose func(g *rig, b *replica)
	why  string
}

var leaseLosses = []leaseLoss{
	{name: "paused past twice the lease, collected, 409", kube: true, why: "was deleted", lose: pausedAndCollected},
	{name: "paused past twice the lease, collected, 404", why: "was deleted", lose: pausedAndCollected},
	{name: "deleted by hand, 409", kube: true, why: "was deleted", lose: func(g *rig, b *replica) { g.deleteLease(b.ring.LeaseName()) }},
	{name: "deleted by hand, 404", why: "was deleted", lose: func(g *rig, b *replica) { g.deleteLease(b.ring.LeaseName()) }},
	{name: "replaced by another uid", kube: true, why: "was replaced by another object of its name", lose: func(g *rig, b *replica) {
		g.deleteLease(b.ring.LeaseName())
		if _, err := g.leases.CoordinationV1().Leases("ring").Create(g.ctx, foreignLease(b.ring.LeaseName(), newSet(rigBuckets)), metav1.CreateOptions{}); err != nil {
			g.t.Fatal(err)
		}
	}},
	{name: "held edited to claim every bucket", kube: true, why: "was changed by someone else", lose: func(g *rig, b *replica) {
		g.editLease(b.ring.LeaseName(), func(l *coordinationv1.Lease) { l.Annotations[AnnotationHeld] = fullSet(rigBuckets).encode() })
	}},
	{name: "marked leaving by someone else", kube: true, why: "was changed by someone else", lose: func(g *rig, b *replica) {
		g.editLease(b.ring.LeaseName(), func(l *coordinationv1.Lease) { l.Annotations[AnnotationLeaving] = "true" })
	}},
	{name: "ring label removed", kube: true, why: "was changed by someone else", lose: func(g *rig, b *replica) {
		g.editLease(b.ring.LeaseName(), func(l *coordinationv1.Lease) { delete(l.Labels, LabelRing) })
	}},
	{name: "deleted by hand while cut off", kube: true, why: "was deleted", lose: func(g *rig, b *replica) {
		g.pauseFor(b, DefaultLeaseDuration+5*time.Second, func() { g.deleteLease(b.ring.LeaseName()) })
	}},
	{name: "ring label removed while cut off", kube: true, why: "was changed by someone else", lose: func(g *rig, b *replica) {
		g.pauseFor(b, DefaultLeaseDuration+5*time.Second, func() {
			g.editLease(b.ring.LeaseName(), func(l *coordinationv1.Lease) { delete(l.Labels, LabelRing) })
		})
	}},
}

// pausedAndCollected pauses b past twice the lease duration, until the
// others have deleted its expired Lease.
func pausedAndCollected(g *rig, b *replica) {
	g.pauseFor(b, 2*DefaultLeaseDuration+5*time.Second, nil)
	_, err := g.leases.CoordinationV1().Leases("ring").Get(g.ctx, b.ring.LeaseName(), metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		g.t.Fatalf("the others did not delete the Lease expired for twice its duration: %v", err)
	}
}

// However its Lease is lost, a replica stops handling at once (or has
// already, fenced), says why it is rejoining, never publishes again what
// it held, and rejoins within a few RetryPeriods of reaching the server
// again: a Lease of its own, formed, handling its share. No object is
// ever handled by two replicas.
func TestRejoinAfterLosingItsLease(t *testing.T) {
	for _, c := range leaseLosses {
		t.Run(c.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T, ctx context.Context) {
				g := newRig(t, ctx, 300)
				if c.kube {
					serveLeasesAsKubeAPIServer(g.leases)
				}
				var log writeLog
				g.joinAll("a", "c")
				b := g.joinWith("b", log.wrap, nil)
				g.waitFormed(30 * time.Second)
				lost := g.lease(b.ring.LeaseName()).UID
				mark := log.len()
				c.lose(g, b)
				g.checkRejoin(b, c.why)
				if held := log.since(mark); len(held) == 0 || held[0].len() != 0 {
					t.Fatalf("the first write of %s after the loss did not hold nothing: %d writes, the first holding %v", b.name, len(held), held)
				}
				l := g.lease(b.ring.LeaseName())
				if ptr.Deref(l.Spec.HolderIdentity, "") != "b" || l.Labels[LabelRing] != "test" || c.kube && l.Annotations[AnnotationSupersedes] != string(lost) {
					t.Fatalf("the Lease after the rejoin: holder %q, labels %v, annotations %v (lost uid %s)", ptr.Deref(l.Spec.HolderIdentity, ""), l.Labels, l.Annotations, lost)
				}
				g.leaveAll()
			})
		})
	}
}

// checkRejoin samples until b has stopped handling, said why it rejoins
// and the ring has formed again with b in it, and fails if b still
// handles a RetryPeriod and a half after the call (the longest between
// two of its reads or writes), or if the ring has not formed within five
// RetryPeriods.
func (g *rig) checkRejoin(b *replica, why string) {
	g.t.Helper()
	stopped, said, wrapped := false, false, false
	for waited := time.Duration(0); ; waited += tick {
		s := b.ring.Status()
		if _, handling := b.ring.Handling(); !handling {
			stopped = true
		}
		said = said || strings.Contains(s.String(), "rejoining after its Lease "+why)
		wrapped = wrapped || errors.Is(s.LastError, ErrLeaseLost)
		switch {
		case !stopped && waited > 3*DefaultRetryPeriod/2:
			g.t.Fatalf("%s still handles %v after losing its Lease: %s", b.name, waited, s)
		case stopped && s.Rejoins > 0 && g.formed():
			g.sampleFor(time.Second)
			if g.twice > 0 {
				g.t.Fatalf("%d samples saw an object handled by two replicas", g.twice)
			}
			if s := b.ring.Status(); s.Rejoins != 1 || s.Rejoining != "" || !said || !wrapped || g.handlers()[b.name] == 0 {
				g.t.Fatalf("after the rejoin: %s (rejoins %d; said why: %v; last error wrapped ErrLeaseLost: %v; handling %v)", s, s.Rejoins, said, wrapped, g.handlers())
			}
			g.t.Logf("rejoined within %v: %s", waited, b.ring.Status())
			return
		case waited > 5*DefaultRetryPeriod:
			for _, rp := range g.replicas {
				g.t.Logf("%s", rp.ring.Status())
			}
			g.t.Fatalf("not formed again within %v of the loss", waited)
		}
		g.sampleFor(tick)
	}
}

// A replica whose create is refused because a Lease of its name is there
// (409 AlreadyExists) writes over it and joins.
func TestJoinOverALeaseOfItsName(t *testing.T) {
	inBubble(t, func(t *testing.T, ctx context.Context) {
		g := newRig(t, ctx, 300)
		serveLeasesAsKubeAPIServer(g.leases)
		g.joinAll("a", "c")
		g.waitFormed(30 * time.Second)
		r, err := New(Config{Client: g.leases.CoordinationV1(), Namespace: "ring", Name: "test", Identity: "b", Buckets: rigBuckets})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.leases.CoordinationV1().Leases("ring").Create(ctx, foreignLease(r.LeaseName(), fullSet(rigBuckets)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		g.startRing("b", r)
		g.waitFormed(5 * DefaultRetryPeriod)
		g.sampleFor(time.Second)
		if g.twice > 0 {
			t.Fatalf("%d samples saw an object handled by two replicas", g.twice)
		}
		l := g.lease(r.LeaseName())
		held, _ := decodeSet(l.Annotations[AnnotationHeld], rigBuckets)
		if ptr.Deref(l.Spec.HolderIdentity, "") != "b" || !held.equal(r.gate.snapshot(rigBuckets)) || r.Status().Rejoins != 0 {
			t.Fatalf("after joining: holder %q, held %v, handling %v, %s", ptr.Deref(l.Spec.HolderIdentity, ""), held.list(), r.gate.snapshot(rigBuckets).list(), r.Status())
		}
		g.leaveAll()
	})
}

// lostResponse passes a replica's Lease calls on, but once armed reports
// the next update failed after the server applied it, as a response lost
// on its way back is.
type lostResponse struct {
	mu           sync.Mutex
	armed, fired bool
}

func (d *lostResponse) wrap(cfg *Config) {
	cfg.Client = wrapLeases(cfg.Client, func(l coordinationv1client.LeaseInterface) coordinationv1client.LeaseInterface {
		return lostResponseLeases{LeaseInterface: l, d: d}
	})
}

func (d *lostResponse) arm() { d.mu.Lock(); d.armed = true; d.mu.Unlock() }

func (d *lostResponse) hasFired() bool { d.mu.Lock(); defer d.mu.Unlock(); return d.fired }

type lostResponseLeases struct {
	coordinationv1client.LeaseInterface
	d *lostResponse
}

func (l lostResponseLeases) Update(ctx context.Context, lease *coordinationv1.Lease, o metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	got, err := l.LeaseInterface.Update(ctx, lease, o)
	l.d.mu.Lock()
	defer l.d.mu.Unlock()
	if err == nil && l.d.armed {
		l.d.armed, l.d.fired = false, true
		return nil, apierrors.NewTimeoutError("the response was lost", 1)
	}
	return got, err
}

// A write of its own that the server applied but whose response was lost
// is no loss: the next write, refused for the resourceVersion it carries,
// finds on the server what it sent, and goes on handling.
func TestAnAppliedWriteWhoseResponseWasLostIsNoLoss(t *testing.T) {
	inBubble(t, func(t *testing.T, ctx context.Context) {
		g := newRig(t, ctx, 300)
		serveLeasesAsKubeAPIServer(g.leases)
		var drop lostResponse
		g.joinAll("a", "c")
		b := g.joinWith("b", drop.wrap, nil)
		g.waitFormed(30 * time.Second)
		drop.arm()
		for range int(4 * DefaultRetryPeriod / tick) {
			g.sampleFor(tick)
			if _, handling := b.ring.Handling(); !handling {
				t.Fatalf("b stopped handling after a write whose response was lost: %s", b.ring.Status())
			}
		}
		if s := b.ring.Status(); !drop.hasFired() || s.Rejoins != 0 || !s.Formed() || g.twice > 0 {
			t.Fatalf("lost response fired: %v; %s; %d samples saw an object handled twice", drop.hasFired(), s, g.twice)
		}
		g.leaveAll()
	})
}

// A read that shows this replica's Lease changed by someone else stops
// its handling at once, before the round plans from that read, without
// waiting for its next write to be refused.
func TestAReadThatShowsItsLeaseChangedStopsHandling(t *testing.T) {
	const n = 16
	clk := testingclock.NewFakeClock(time.Now())
	cs := fake.NewClientset()
	serveLeasesAsKubeAPIServer(cs)
	r, err := New(Config{Client: cs.CoordinationV1(), Namespace: "ns", Name: "r", Identity: "me", Buckets: n, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	r.fence = startFencer(clk, func() {})
	defer r.fence.stop()
	ctx := t.Context()
	st := r.newState()
	for range 3 { // alone: ready, claims every bucket, opens them
		r.round(ctx, st)
		clk.Step(r.cfg.RetryPeriod / 4)
	}
	if got := r.gate.snapshot(n).len(); got != n {
		t.Fatalf("alone, handling %d buckets, want %d", got, n)
	}
	l, err := cs.CoordinationV1().Leases("ns").Get(ctx, r.lease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l.Annotations[AnnotationCached] = newSet(n).encode()
	if _, err := cs.CoordinationV1().Leases("ns").Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.read(ctx, st); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("read after its Lease was edited: %v, want an error wrapping ErrLeaseLost", err)
	}
	if open := r.gate.snapshot(n); open.len() != 0 || st.held.len() != 0 || st.lease != nil || st.found == nil {
		t.Fatalf("after the read: handling %v, holding %v, lease %v, found %v", open.list(), st.held.list(), st.lease != nil, st.found != nil)
	}
}
