package cache

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/kreflector/cache/cachetest"
)

// Watches that close with nothing in them (a dead server behind a load
// balancer) and stalls count as lost time. On cachetest's server and its
// faults (scripted calls: health_empty_watches_test.go).

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
