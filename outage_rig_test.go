package cache_test

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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache"
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
	store cache.Store
	r     *cache.Reflector
	start time.Time

	mu      sync.Mutex
	changes []healthAt
	written int
}

// newFaultRig starts the rig inside the calling synctest bubble with one
// ConfigMap on the server, and returns once the Reflector has synced and
// its watch is open. tune, if set, adjusts the Reflector before it runs.
// The Reflector is stopped and the server closed when t ends.
func newFaultRig(t *testing.T, opts cachetest.Options, tune func(*cache.Reflector)) *faultRig {
	t.Helper()
	g := &faultRig{t: t, srv: cachetest.NewServer(opts), start: time.Now()}
	t.Cleanup(g.srv.Close)
	g.cms = g.srv.Resource(cachetest.Type{Resource: "configmaps", Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}})
	g.write()
	g.store = cache.NewStore(cache.MetaNamespaceKeyFunc)
	g.r = cache.NewReflectorWithOptions(g.cms, &corev1.ConfigMap{}, g.store, cache.ReflectorOptions{
		Name:           "configmaps",
		Rand:           rand.New(rand.NewPCG(7, 7)),
		UseWatchList:   ptr.To(false),
		OnHealthChange: g.record,
	})
	if tune != nil {
		tune(g.r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); g.r.RunWithContext(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	if err := g.r.WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
	return g
}

func (g *faultRig) record(h cache.Health) {
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
		if c.h.State == cache.Degraded {
			fmt.Fprintf(&b, ": %v", c.h.LastError)
		}
	}
	return b.String()
}

// degraded returns the Degraded changes recorded from from on (times
// since the rig started) for which keep, if set, holds.
func (g *faultRig) degraded(from time.Duration, keep func(cache.Health) bool) []healthAt {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []healthAt
	for _, c := range g.changes {
		if c.h.State == cache.Degraded && c.at >= from && (keep == nil || keep(c.h)) {
			out = append(out, c)
		}
	}
	return out
}

// because keeps the changes with reason.
func because(reason cache.DegradedReason) func(cache.Health) bool {
	return func(h cache.Health) bool { return h.Reason == reason }
}

// expectFirstDegraded fails the test unless the first Degraded change from
// from on has reason and an error errOK accepts, and came between lo and
// hi after from (inclusive).
func (g *faultRig) expectFirstDegraded(from, lo, hi time.Duration, reason cache.DegradedReason, errOK func(error) bool, what string) {
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

// expect fails the test unless health is state (with reason when
// Degraded) now; when says what the moment is.
func (g *faultRig) expect(state cache.HealthState, reason cache.DegradedReason, when string) {
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
	for end := g.now() + within; g.r.Health().State != cache.Synced && g.now() < end; {
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
