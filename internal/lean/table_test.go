package lean

import (
	"fmt"
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
	if _, held := tab.stripes[1].cur["web"]; held || len(tab.stripes[1].cur) != 0 {
		t.Fatal("one sharer at a time used the second stripe")
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

// TestStripesForgetTogether: a stripe that took an object while the
// first was busy, and none since, forgets its values with the others,
// once two generations have passed.
func TestStripesForgetTogether(t *testing.T) {
	tab := newTable(true, false, 2)
	tab.stripes[0].mu.Lock()
	tab.Share(&labelled{App: strings.Clone("web"), Own: strings.Clone("once")})
	tab.stripes[0].mu.Unlock()
	if _, held := tab.stripes[1].cur["once"]; !held {
		t.Fatal("the object did not go through the second stripe")
	}
	for i := range 2*MinSpan + 1 {
		tab.Share(&labelled{App: strings.Clone("web"), Own: strings.Clone(fmt.Sprint("own-", i))})
	}
	s := tab.stripes[1]
	if _, held := s.cur["once"]; held {
		t.Fatal("the second stripe still holds the value in its current generation")
	}
	if _, held := s.prev["once"]; held {
		t.Fatal("the second stripe still holds the value two generations on")
	}
	tab.Synced(7 * MinSpan)
	if got := tab.span.Load(); got != 7*MinSpan {
		t.Fatalf("a sync of %d objects left the span at %d", 7*MinSpan, got)
	}
}
