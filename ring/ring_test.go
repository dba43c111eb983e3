package ring

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
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
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
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
		for _, n := range []string{"d", "e"} {
			g.leave(n)
		}
	})
}

// A replica whose connection goes silent for longer than its Lease stops
// handling at its renew deadline, before the others take over at the
// Lease's expiry, and rejoins once the connection is back.
func TestRingFencesABlackHoledReplica(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		g := newRig(t, ctx, 300)
		for _, n := range []string{"a", "b", "c"} {
			g.join(n)
		}
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
		for _, n := range []string{"a", "b", "c"} {
			g.leave(n)
		}
	})
}
