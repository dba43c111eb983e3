package lean

import (
	"strings"
	"testing"
	"time"
)

type labelled struct{ App, Own string }

// TestABusyStripeIsPassedBy: while another sharer holds the first
// stripe, an object is shared through the next one at once instead of
// waiting; sharing one at a time uses the first stripe only.
func TestABusyStripeIsPassedBy(t *testing.T) {
	tab := newTable(true, false, 2)
	first := &labelled{App: strings.Clone("web"), Own: strings.Clone("a")}
	tab.Share(first)
	if tab.stripes[0].walked != 1 || tab.stripes[1].walked != 0 {
		t.Fatalf("one sharer at a time used stripes %d/%d, want the first only", tab.stripes[0].walked, tab.stripes[1].walked)
	}
	tab.stripes[0].mu.Lock()
	done := make(chan *labelled)
	go func() {
		o := &labelled{App: strings.Clone("web"), Own: strings.Clone("b")}
		tab.Share(o)
		done <- o
	}()
	select {
	case o := <-done:
		if _, held := tab.stripes[1].cur[o.App]; !held {
			t.Fatal("the object was not shared through the free stripe")
		}
	case <-time.After(10 * time.Second): // a guard against a hang, not a timing
		t.Fatal("Share waited for the busy stripe while another was free")
	}
	tab.stripes[0].mu.Unlock()
	if got := tab.Walked(); got != 2 {
		t.Fatalf("Walked = %d, want 2", got)
	}
}

// TestEveryStripeFollowsTheSync: Synced sets every stripe's span.
func TestEveryStripeFollowsTheSync(t *testing.T) {
	tab := newTable(true, false, 3)
	tab.Synced(7 * MinSpan)
	for i, s := range tab.stripes {
		if s.span != 7*MinSpan {
			t.Fatalf("stripe %d spans %d, want %d", i, s.span, 7*MinSpan)
		}
	}
}
