package ring

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kreflector/cache"
)

// Config.ReflectorOptions reaches the ring's informers: with Compact,
// each replica holds its share as bytes, through joins and a leave (the
// reshards merge what moves into the compact store), and together they
// hold every object once.
func TestRingInformersTakeReflectorOptions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		g := newRig(t, ctx, 60)
		compact := func(c *Config) { c.ReflectorOptions = cache.ReflectorOptions{Compact: &cache.CompactOptions{}} }
		for _, name := range []string{"a", "b", "c"} {
			g.joinWith(name, compact, nil)
		}
		g.waitFormed(30 * time.Second)
		g.leave("c")
		g.waitFormed(30 * time.Second)
		total := 0
		for _, name := range []string{"a", "b"} {
			st := g.replicas[name].inf.Stats().Store
			if st == nil || st.Encoded != st.Objects {
				t.Fatalf("replica %s: compact store's stats %+v", name, st)
			}
			total += st.Objects
		}
		if total != len(g.objects) {
			t.Fatalf("the replicas hold %d objects, want %d", total, len(g.objects))
		}
	})
}
