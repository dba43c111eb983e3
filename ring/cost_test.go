package ring

import (
	"context"
	"sync"
	"testing"
	"time"

	clientgocache "k8s.io/client-go/tools/cache"
)

// callCounter counts a replica's handler calls.
type callCounter struct {
	mu sync.Mutex
	n  int
}

func (c *callCounter) handler() clientgocache.ResourceEventHandler {
	count := func() { c.mu.Lock(); c.n++; c.mu.Unlock() }
	return clientgocache.ResourceEventHandlerFuncs{
		AddFunc:    func(interface{}) { count() },
		UpdateFunc: func(interface{}, interface{}) { count() },
		DeleteFunc: func(interface{}) { count() },
	}
}

func (c *callCounter) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// A membership change costs what moves: a replica that only gives buckets
// up fetches nothing and its handlers are called for nothing; a replica
// that takes buckets over fetches their objects once, and its handlers
// get one add for each. With ReshardByRelist every change relists the
// whole new share (the comparison).
func TestAMembershipChangeCostsOnlyWhatMoves(t *testing.T) {
	for _, relist := range []bool{false, true} {
		name := "merge"
		if relist {
			name = "relist"
		}
		t.Run(name, func(t *testing.T) {
			inBubble(t, func(t *testing.T, ctx context.Context) { membershipCost(t, ctx, relist) })
		})
	}
}

func membershipCost(t *testing.T, ctx context.Context, relist bool) {
	g := newRig(t, ctx, 400)
	calls := map[string]*callCounter{}
	join := func(name string) {
		calls[name] = &callCounter{}
		g.joinWith(name, func(c *Config) { c.ReshardByRelist = relist }, calls[name].handler())
	}
	join("a")
	join("b")
	join("c")
	g.waitFormed(30 * time.Second)
	g.sampleFor(2 * time.Second)
	type mark struct {
		listed      uint64
		calls, held int
	}
	at := func() map[string]mark {
		out := map[string]mark{}
		handled := g.handlers()
		for name, rp := range g.replicas {
			out[name] = mark{rp.inf.Stats().Reflector.ItemsListed, calls[name].get(), handled[name]}
		}
		return out
	}
	for _, step := range []struct {
		what   string
		change func()
	}{{"join d", func() { join("d") }}, {"leave a", func() { g.leave("a") }}} {
		before := at()
		step.change()
		g.waitFormed(time.Minute)
		g.sampleFor(5 * time.Second) // a leave's takeover waits for its replay
		after := at()
		for name, b := range before {
			a, ok := after[name]
			if !ok {
				continue
			}
			gained := max(a.held-b.held, 0)
			fetched, called := a.listed-b.listed, a.calls-b.calls
			t.Logf("%s: %s fetched %d, handler calls %d, gained %d, held %d→%d", step.what, name, fetched, called, gained, b.held, a.held)
			if !relist && (fetched != uint64(gained) || called != gained) {
				t.Errorf("%s: %s fetched %d objects and made %d handler calls, for %d objects gained", step.what, name, fetched, called, gained)
			}
			if relist && fetched != uint64(a.held) {
				t.Errorf("%s: relisting, %s fetched %d objects, want its whole share %d", step.what, name, fetched, a.held)
			}
		}
	}
	g.leaveAll()
}
