package cache

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

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
	lw := &timedLW{scriptLW: newScript(nil, watches)}
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

// After an outage that was reported, the relist completes and the first
// watch request is throttled once: the sync ended the loss and started the
// backoff over, so the 429 raises no new alarm and the re-watch follows
// within the first delay.
func TestOneThrottleAfterRecoveryIsNoAlarm(t *testing.T) {
	lists := []listReply{{list: cmList("10", "", cm("a", "5"))}, {list: cmList("20", "", cm("a", "15")), delay: 30 * time.Second}}
	watches := []watchReply{
		{events: []watch.Event{ev(watch.Modified, cm("a", "11")), errEvent(internalStatus())}},
		{err: apierrors.NewTooManyRequests("slow down", 0)},
		{hang: true},
	}
	lw := &timedLW{scriptLW: newScript(lists, watches)}
	var changes []string
	runTimed(t, lw, func(*Reflector) {}, 2*time.Minute, &changes)
	if len(changes) != 3 || changes[1] != "Degraded/WatchFailing@10s" || !strings.HasPrefix(changes[2], "Synced/@3") {
		t.Fatalf("health changes %q", changes)
	}
	if gap := lw.times[4].Sub(lw.times[3]); gap > 1600*time.Millisecond {
		t.Fatalf("the re-watch after the 429 came %v later: the backoff the outage grew was kept", gap)
	}
}

// With a negative HealthGrace a loss is reported at once and a sync ends
// it; the relist's watch request is no loss of its own (no blip).
func TestNegativeGraceReportsAtOnce(t *testing.T) {
	lists := []listReply{{list: cmList("10", "", cm("a", "5"))}, {list: cmList("20", "", cm("a", "15"))}}
	watches := []watchReply{{events: []watch.Event{ev(watch.Modified, cm("a", "11")), errEvent(internalStatus())}}, {delay: time.Minute, hang: true}}
	lw := &timedLW{scriptLW: newScript(lists, watches)}
	var changes []string
	runTimed(t, lw, func(r *Reflector) { r.live.grace = -1 }, 2*time.Minute, &changes)
	// The relist follows the first backoff delay (0.8-1.6 s).
	if len(changes) != 3 || changes[1] != "Degraded/WatchFailing@0s" || !strings.HasPrefix(changes[2], "Synced/@") {
		t.Fatalf("health changes %q", changes)
	}
}

// A cycle cancelled while its watch request is in flight forgets the
// tentative loss with it: a later cycle whose LIST takes long is not
// reported Degraded for the old request.
func TestCancelledCycleLeavesNoLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := newScript([]listReply{{list: cmList("10", "", cm("a", "5"))}}, []watchReply{{closeAfter: 5 * time.Minute}, {delay: time.Hour}})
		log := &healthLog{start: time.Now()}
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, &recordingStore{}, ReflectorOptions{UseWatchList: ptr.To(false), OnHealthChange: log.record})
		ctx1, cancel1 := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		wg.Go(func() { _ = r.ListAndWatchWithContext(ctx1) })
		time.Sleep(5*time.Minute + 5*time.Second)
		cancel1()
		wg.Wait()
		ctx2, cancel2 := context.WithCancel(t.Context())
		wg.Go(func() { _ = r.ListAndWatchWithContext(ctx2) })
		time.Sleep(time.Minute)
		synctest.Wait()
		cancel2()
		wg.Wait()
		lw.inflight.Wait()
		wantChanges(t, log.changes, "Synced/@0s")
	})
}

// The liveness timer is made once and re-armed after that: a Reflector
// arms it at every watch request, so making one each time would cost an
// allocation per request.
func TestLivenessTimerIsMadeOnce(t *testing.T) {
	l := liveness{grace: time.Hour}
	l.arm(timerDue, time.Hour)
	allocs := testing.AllocsPerRun(50, func() {
		l.calling(time.Now())
		l.opened()
		l.arm(timerDue, time.Hour)
		l.stopTimer()
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per arm and stop after the first", allocs)
	}
	if l.C() != nil {
		t.Fatal("a stopped timer's channel is selected on")
	}
}
