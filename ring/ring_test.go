package ring

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
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
