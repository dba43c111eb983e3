package cache

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kreflector/cache/cachetest"
)

// Failure loops back off and are reported: on scripted calls, then on
// cachetest's server and its faults.

// A server that ends every watch with a 500 before it delivers anything,
// within MaxInternalErrorRetryDuration: client-go re-watches at once, in a
// tight loop; ours backs off between such watches (0.8 s doubling), and
// reports the loss once it has lasted the grace period.
func TestInternalErrorLoopBacksOff(t *testing.T) {
	var watches []watchReply
	for range 50 {
		watches = append(watches, watchReply{events: []watch.Event{errEvent(internalStatus())}})
	}
	lw := newScript([]listReply{{list: cmList("10", "", cm("a", "5"))}}, watches)
	var changes []string
	runTimed(t, lw, func(r *Reflector) { r.MaxInternalErrorRetryDuration = time.Hour }, 10*time.Second, &changes)
	n := strings.Count(strings.Join(lw.verbs(), " "), "WATCH")
	if n < 3 || n > 6 {
		t.Fatalf("%d watch requests in the first 10 s, want a backoff's worth (3-6)", n)
	}
	wantChanges(t, changes, "Synced/@0s", "Degraded/WatchFailing@10s")
}

// A WatchList relist loop: every WatchList delivers its initial events in
// several bursts and its watch then fails at once. The initial events do
// not end the loss (only the sync suspends it), so it is reported, and the
// backoff between attempts keeps growing instead of starting over.
func TestWatchListRelistLoopBacksOffAndIsReported(t *testing.T) {
	initial := make([]watch.Event, 0, 602)
	for i := range 600 {
		initial = append(initial, ev(watch.Added, cm("o"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+strings.Repeat("y", i/26), "5")))
	}
	initial = append(initial, bookmark("10", true), errEvent(internalStatus()))
	var watches []watchReply
	for range 8 {
		watches = append(watches, watchReply{events: initial})
	}
	lw := newScript(nil, watches)
	var changes []string
	runTimed(t, lw, func(r *Reflector) { r.server.watchList = true }, 2*time.Minute, &changes)
	if len(lw.times) < 6 {
		t.Fatalf("%d WatchLists", len(lw.times))
	}
	if gap := lw.times[5].Sub(lw.times[4]); gap < 6*time.Second {
		t.Fatalf("the fifth WatchList came %v after the fourth: the backoff started over", gap)
	}
	if len(changes) < 2 || !strings.HasPrefix(changes[1], "Degraded/WatchFailing@1") {
		t.Fatalf("health changes %q", changes)
	}
}

// On cachetest's server and its faults.

// Watches that end with a 500 (an ERROR event with an InternalError
// status, as kube-apiserver sends when its storage watch fails) while
// Reflector.MaxInternalErrorRetryDuration (5 minutes here) allows
// re-watching from the same resourceVersion: a watch that delivered
// nothing is re-watched after a backoff delay, not at once, so the first
// 10 s see a handful of requests, not a tight loop; none of them relists;
// Degraded(WatchFailing) with the 500 as LastError once the loss lasts the
// grace period; Synced when data flows after the server recovers.
func TestHealthFaultInternalErrorStreamsBackOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newFaultRig(t, cachetest.Options{}, func(r *Reflector) { r.MaxInternalErrorRetryDuration = 5 * time.Minute })
		g.sleepUntil(30 * time.Second)
		from := g.now()
		watchesBefore, listsBefore := g.srv.Stats().Calls[cachetest.VerbWatch], g.srv.Stats().Lists
		g.srv.FailNextWatchStreams(100, cachetest.InternalError())
		g.srv.CloseWatches()
		g.sleepUntil(from + 10*time.Second)
		if n := g.srv.Stats().Calls[cachetest.VerbWatch] - watchesBefore; n > 6 {
			t.Fatalf("%d watch requests in the first 10 s of watches ending with a 500, want at most 6 (a backoff delay between re-watches, not a tight loop)", n)
		}
		g.sleepUntil(from + 11*time.Second)
		g.expectFirstDegraded(from, 10*time.Second, 11*time.Second, ReasonWatchFailing, apierrors.IsInternalError,
			"watches ending with a 500 within MaxInternalErrorRetryDuration")
		g.sleepUntil(from + time.Minute)
		if n := g.srv.Stats().Lists - listsBefore; n != 0 {
			t.Fatalf("%d relists within MaxInternalErrorRetryDuration, want re-watches only", n)
		}
		g.srv.ClearFaults()
		g.write() // the next re-watch, whenever its backoff ends, replays it
		g.awaitSynced(3 * time.Minute)
		g.expect(Synced, ReasonNone, "an event flowed on a re-watch once the server stopped failing watches")
		g.expectConverged()
	})
}
