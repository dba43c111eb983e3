package cache

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache/cachetest"
)

// faultRig is a Reflector (LIST then WATCH, a fixed Rand, default grace
// and stall window) keeping a store of cachetest's ConfigMaps, run inside
// a synctest bubble, with every health change recorded with its time.
// Times are counted from the rig's start on synctest's clock.
type faultRig struct {
	t     *testing.T
	srv   *cachetest.Server
	cms   *cachetest.Resource
	store Store
	r     *Reflector
	start time.Time

	mu      sync.Mutex
	changes []healthAt
	written int
}

// newFaultRig starts the rig inside the calling synctest bubble with one
// ConfigMap on the server, and returns once the Reflector has synced and
// its watch is open. tune, if set, adjusts the Reflector before it runs.
// The Reflector is stopped and the server closed when t ends.
func newFaultRig(t *testing.T, opts cachetest.Options, tune func(*Reflector)) *faultRig {
	t.Helper()
	g := &faultRig{t: t, srv: cachetest.NewServer(opts), start: time.Now()}
	t.Cleanup(g.srv.Close)
	g.cms = g.srv.Resource(cachetest.Type{Resource: "configmaps", Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}})
	g.write()
	g.store = NewStore(MetaNamespaceKeyFunc)
	g.r = NewReflectorWithOptions(g.cms, &corev1.ConfigMap{}, g.store, ReflectorOptions{
		Name:           "configmaps",
		Rand:           rand.New(rand.NewPCG(7, 7)),
		UseWatchList:   ptr.To(false),
		OnHealthChange: g.record,
	})
	if tune != nil {
		tune(g.r)
	}
	startRunIn(t, context.Background(), g.r.RunWithContext)
	if err := g.r.WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
	return g
}

func (g *faultRig) record(h Health) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.changes = append(g.changes, healthAt{h, h.Since.Sub(g.start)})
}

// now is the time since the rig started.
func (g *faultRig) now() time.Duration { return time.Since(g.start) }

// sleepUntil sleeps until d after the rig started, then waits for every
// goroutine of the bubble to block.
func (g *faultRig) sleepUntil(d time.Duration) {
	g.t.Helper()
	if left := d - g.now(); left > 0 {
		time.Sleep(left)
	}
	synctest.Wait()
}

// write creates one more ConfigMap on the server.
func (g *faultRig) write() {
	g.t.Helper()
	g.written++
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("cm-%03d", g.written)}}
	if _, err := g.cms.Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		g.t.Fatal(err)
	}
}

// history renders the health changes so far, for failure messages.
func (g *faultRig) history() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var b strings.Builder
	for _, c := range g.changes {
		fmt.Fprintf(&b, "\n  %v %s(%s)", c.at, c.h.State, c.h.Reason)
		if c.h.State == Degraded {
			fmt.Fprintf(&b, ": %v", c.h.LastError)
		}
	}
	return b.String()
}

// degraded returns the Degraded changes recorded from from on (times
// since the rig started) for which keep, if set, holds.
func (g *faultRig) degraded(from time.Duration, keep func(Health) bool) []healthAt {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []healthAt
	for _, c := range g.changes {
		if c.h.State == Degraded && c.at >= from && (keep == nil || keep(c.h)) {
			out = append(out, c)
		}
	}
	return out
}

// because keeps the changes with reason.
func because(reason DegradedReason) func(Health) bool {
	return func(h Health) bool { return h.Reason == reason }
}

// expectFirstDegraded fails the test unless the first Degraded change from
// from on has reason and an error errOK accepts, and came between lo and
// hi after from (inclusive).
func (g *faultRig) expectFirstDegraded(from, lo, hi time.Duration, reason DegradedReason, errOK func(error) bool, what string) {
	g.t.Helper()
	all := g.degraded(from, nil)
	if len(all) == 0 {
		g.t.Fatalf("%s: never Degraded since %v (now %v), want Degraded(%s) %v-%v after it; changes:%s",
			what, from, g.now(), reason, lo, hi, g.history())
	}
	first := all[0]
	if in := first.at - from; first.h.Reason != reason || in < lo || in > hi {
		g.t.Fatalf("%s: first Degraded(%s) came %v after %v, want Degraded(%s) %v-%v after it; changes:%s",
			what, first.h.Reason, in, from, reason, lo, hi, g.history())
	}
	if errOK != nil && !errOK(first.h.LastError) {
		g.t.Fatalf("%s: Degraded(%s) with LastError %v; changes:%s", what, reason, first.h.LastError, g.history())
	}
}

// expectDegradedAfterGrace fails the test unless a loss of touch that
// began at from raised no alarm for its first 9 s (within the grace period,
// 10 s) and was reported by its 11th second, the first Degraded change
// having reason and a LastError errOK accepts. It sleeps until from+11s.
func (g *faultRig) expectDegradedAfterGrace(from time.Duration, reason DegradedReason, errOK func(error) bool, what string) {
	g.t.Helper()
	g.sleepUntil(from + 9*time.Second)
	g.expectNoAlarm(from, "the first 9 s of "+what+" (within the grace period)")
	g.sleepUntil(from + 11*time.Second)
	g.expectFirstDegraded(from, 10*time.Second, 11*time.Second, reason, errOK, what)
}

// expect fails the test unless health is state (with reason when
// Degraded) now; when says what the moment is.
func (g *faultRig) expect(state HealthState, reason DegradedReason, when string) {
	g.t.Helper()
	h := g.r.Health()
	if h.State != state || h.Reason != reason {
		g.t.Fatalf("%s (%v in): health %s(%s), want %s(%s); last error %v; changes:%s",
			when, g.now(), h.State, h.Reason, state, reason, h.LastError, g.history())
	}
}

// awaitSynced sleeps, a second at a time, until health is Synced or
// within has passed.
func (g *faultRig) awaitSynced(within time.Duration) {
	for end := g.now() + within; g.r.Health().State != Synced && g.now() < end; {
		g.sleepUntil(g.now() + time.Second)
	}
}

// behind reports whether the store lacks some of the server's objects.
func (g *faultRig) behind() bool {
	objs, _ := g.cms.Objects()
	return !cachetest.Compare(objs, g.store.List()).Empty()
}

// expectConverged fails the test unless the store equals the server.
func (g *faultRig) expectConverged() {
	g.t.Helper()
	objs, _ := g.cms.Objects()
	if d := cachetest.Compare(objs, g.store.List()); !d.Empty() {
		g.t.Fatalf("store differs from the server at %v: %s", g.now(), d)
	}
}

// expectNoAlarm fails the test if health was Degraded at any time since
// from.
func (g *faultRig) expectNoAlarm(from time.Duration, what string) {
	g.t.Helper()
	if d := g.degraded(from, nil); len(d) > 0 {
		g.t.Fatalf("%s must raise no alarm, but health was Degraded(%s) %v after %v; changes:%s", what, d[0].h.Reason, d[0].at-from, from, g.history())
	}
}

// refusedWatches are the call failures a server (or its absence) answers
// watch opens with for a while: 429 with a Retry-After of 1 s (the max
// in-flight filter of a busy kube-apiserver, once the REST client's own
// retries are used up) and refused connections (an apiserver restarting:
// nothing listens on the port for a few seconds).
var refusedWatches = []struct {
	name   string
	fault  cachetest.Fault
	reason DegradedReason
	is     func(error) bool
}{
	{"429", cachetest.TooManyRequests(time.Second), ReasonThrottled, apierrors.IsTooManyRequests},
	{"refused", cachetest.ConnectionRefused(), ReasonUnreachable, utilnet.IsConnectionRefused},
}

// refuseWatches cuts the rig's watch 30 s in, the next n watch opens
// failing with fault; it returns the time of the cut.
func (g *faultRig) refuseWatches(n int, fault cachetest.Fault) time.Duration {
	g.t.Helper()
	g.sleepUntil(30 * time.Second)
	from := g.now()
	g.srv.FailNext(cachetest.VerbWatch, n, fault)
	g.srv.CloseWatches()
	return from
}

// expectNoEarlyRetries fails the test if the Reflector made a call before
// a Retry-After the server gave it had passed.
func (g *faultRig) expectNoEarlyRetries() {
	g.t.Helper()
	if n := g.srv.Stats().EarlyRetries; n != 0 {
		g.t.Fatalf("%d calls before a Retry-After had passed", n)
	}
}

// expire makes the rig's watch end with a 410 at from: the watch is hung
// (a connection lost in transit) while the server writes twice and
// compacts its history past the watch's resourceVersion, then closed, so
// the re-watch gets 410 Expired and the Reflector relists. The watch has
// been open for longer than the grace period, so its end is not taken for
// an empty watch. It returns from, the time of the close.
func (g *faultRig) expire(at time.Duration, listFault cachetest.Fault, listFailures int) time.Duration {
	g.t.Helper()
	g.sleepUntil(at - 5*time.Second)
	g.srv.HangWatches()
	g.write()
	g.write()
	if err := g.srv.Compact(g.srv.ResourceVersion()); err != nil {
		g.t.Fatal(err)
	}
	g.srv.FailNext(cachetest.VerbList, listFailures, listFault)
	g.sleepUntil(at)
	g.srv.CloseWatches()
	return at
}

// changesFrom returns every change recorded from from on.
func (g *faultRig) changesFrom(from time.Duration) []healthAt {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []healthAt
	for _, c := range g.changes {
		if c.at >= from {
			out = append(out, c)
		}
	}
	return out
}

// notNil accepts any error but nil: LastError must say why.
func notNil(err error) bool { return err != nil }

// healthAt is a health change and when (since the test began) it came.
type healthAt struct {
	h  Health
	at time.Duration
}
