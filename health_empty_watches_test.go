package cache

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/watch"

	"github.com/kreflector/cache/cachetest"
)

// Watches that close with nothing in them (a dead server behind a load
// balancer) and stalls count as lost time: on scripted calls, then on
// cachetest's server and its faults.

// Behind a load balancer, the REST client's retries can make each watch
// request take 9 s and the watch then close empty 1.5 s later. How long a
// watch stayed open counts from when it opened, not from the request, so
// these are empty watches: Degraded once the loss is 10 s old.
func TestHealthDegradedWhenSlowOpensCloseEmpty(t *testing.T) {
	watches := []watchReply{{closeAfter: 5 * time.Minute}}
	for range 6 {
		watches = append(watches, watchReply{delay: 9 * time.Second, closeAfter: 1500 * time.Millisecond})
	}
	changes, _ := runScripted(t, []listReply{{list: cmList("10", "", cm("a", "5"))}}, watches, 7*time.Minute)
	// The first empty close is at 5m10.5s; the next at 5m21s makes the loss
	// 10.5 s old.
	if len(changes) < 2 || changes[1] != "Degraded/WatchFailing@5m21s" {
		t.Fatalf("health changes %q", changes)
	}
}

// A stall, then a re-watch that is just as silent and is ended as stalled
// too: Degraded(Stalled) throughout, with no Synced in between.
func TestHealthNoSyncedBetweenStalls(t *testing.T) {
	watches := []watchReply{{events: []watch.Event{bookmark("12", false)}, hang: true}, {hang: true}}
	changes, _ := runScripted(t, []listReply{{list: cmList("10", "", cm("a", "5"))}}, watches, 30*time.Minute)
	// The second stall only changes LastError (its text says the watch
	// outlived its timeout).
	if len(changes) != 3 || changes[0] != "Synced/@0s" || changes[1] != "Degraded/Stalled@3m0s" || changes[2] != changes[1] {
		t.Fatalf("health changes %q", changes)
	}
}

// Behind a load balancer a dead server's watches open and close cleanly
// with nothing in them: Degraded once that has gone on for the grace
// period, and Synced again only when a watch delivers data.
func TestHealthDegradedWhenEveryWatchComesBackEmpty(t *testing.T) {
	watches := []watchReply{{events: []watch.Event{ev(watch.Modified, cm("a", "11"))}, closeAfter: 2 * time.Second}}
	for range 10 {
		watches = append(watches, watchReply{closeAfter: 2 * time.Second})
	}
	watches = append(watches, watchReply{events: []watch.Event{ev(watch.Modified, cm("a", "12"))}, hang: true})
	changes, h := runScripted(t, []listReply{{list: cmList("10", "", cm("a", "5"))}}, watches, time.Minute)
	// The first empty watch closes at 4 s; the one closing at 14 s makes
	// the loss 10 s old; data flows again at 22 s.
	wantChanges(t, changes, "Synced/@0s", "Degraded/WatchFailing@14s", "Synced/@22s")
	if !errors.Is(h.LastError, errEmptyWatches) {
		t.Fatalf("LastError %v", h.LastError)
	}
}

// On cachetest's server and its faults.

// The load-balancer pattern: the server behind a load balancer is gone,
// so every watch request succeeds and the watch ends cleanly with nothing
// in it, here 2 s after it opened (the REST client's retries inside the
// call), for a minute; then the server is back. Contract: a loss of
// touch, Degraded(WatchFailing) with LastError once it has lasted the
// grace period: 10 s after the first empty close, reported at the close
// that makes it that old (so 10-14 s into the minute), not before. Only
// data ends it: a working watch that merely opens leaves it Degraded, an
// event makes it Synced.
func TestHealthFaultLoadBalancerEmptyWatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { testEmptyWatches(t, 2*time.Second, false) })
}

// The same pattern with watches the balancer closes at once (no byte of
// the stream comes through, though the request was answered), while
// LISTs work. The Reflector relists after each (VeryShortWatchError;
// after three at one resourceVersion the StaleRVLoop breaker reports at
// once, which is its own rule and allowed here). Each relist completes a
// sync, but the watch after it fails at once: a loop of relists, which
// keeps the loss going from its start (see Health), so the alarm is the
// same: Degraded(WatchFailing) 10-14 s in. The relists back off as
// client-go's do (a completed sync does not reset the backoff), so once
// the server is back the Reflector may wait out a grown delay (at most
// 60 s: 30 s with full jitter) before it relists and is Synced.
func TestHealthFaultEmptyWatchesClosedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { testEmptyWatches(t, 0, true) })
}

// testEmptyWatches runs a minute of watches that close empty closeIn
// after they open (see the two tests above); syncCanEnd: a completed
// sync may end the loss before data flows.
func testEmptyWatches(t *testing.T, closeIn time.Duration, syncCanEnd bool) {
	g := newFaultRig(t, cachetest.Options{}, nil)
	g.sleepUntil(30 * time.Second)
	from := g.now()
	listsBefore := g.srv.Stats().Calls[cachetest.VerbList]
	g.srv.CloseNextWatches(1000, closeIn)
	g.srv.CloseWatches()
	g.sleepUntil(from + 15*time.Second)
	alarms := g.degraded(from, because(ReasonWatchFailing))
	// The StaleRVLoop breaker reports at once; the loss is then reported,
	// and the failures after it refresh its reason, before the grace too.
	loop := g.degraded(from, because(ReasonStaleRVLoop))
	if len(alarms) > 0 && alarms[0].at-from < 10*time.Second && (len(loop) == 0 || alarms[0].at < loop[0].at) {
		t.Fatalf("Degraded(WatchFailing) %v into the empty watches, before the grace period; changes:%s", alarms[0].at-from, g.history())
	}
	if len(alarms) == 0 || alarms[0].at-from > 14*time.Second || alarms[0].h.LastError == nil {
		if syncCanEnd {
			t.Logf("%d LISTs", g.srv.Stats().Calls[cachetest.VerbList]-listsBefore)
		}
		st := g.r.Stats()
		hint := ""
		if syncCanEnd {
			hint = " (each relist after a very short watch completed a sync; does that end the loss? see the test's comment)"
		}
		t.Fatalf("15 s into watches that all close empty %v after opening (%d watch requests, %d relists): no Degraded(WatchFailing) with LastError 10-14 s in%s; changes:%s",
			closeIn, g.srv.Stats().Calls[cachetest.VerbWatch], st.Lists[ListShortWatch]+st.Lists[ListStaleRVBreaker], hint, g.history())
	}
	g.sleepUntil(from + time.Minute)
	if n := g.srv.Stats().Calls[cachetest.VerbList] - listsBefore; n > 10 {
		// When a completed sync still reset the backoff: 52.
		t.Fatalf("%d LISTs in a minute of empty watches: a relist storm, not a backoff", n)
	}
	g.srv.ClearFaults()
	g.sleepUntil(from + 65*time.Second)
	if !syncCanEnd {
		g.expect(Degraded, ReasonWatchFailing, "a working watch is open again but nothing flowed on it")
	}
	g.write()
	if syncCanEnd {
		// The backoff the relist loop grew runs out first.
		g.sleepUntil(from + 65*time.Second + time.Minute)
	} else {
		g.sleepUntil(from + 66*time.Second)
	}
	g.expect(Synced, ReasonNone, "an event flowed after the empty watches")
	g.expectConverged()
	if n := g.srv.Stats().Faults[cachetest.FaultEmptyWatch]; n < 5 {
		t.Fatalf("only %d empty watches in a minute", n)
	}
}
