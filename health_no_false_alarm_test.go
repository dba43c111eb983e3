package cache

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache/cachetest"
)

// No false alarms: what mends itself within the grace period raises none.
// On scripted calls, then on cachetest's server and its faults.

// No false alarm: a watch request that takes a few seconds.
func TestHealthNoAlarmWhenWatchOpenIsSlow(t *testing.T) {
	watches := []watchReply{
		{closeAfter: 5 * time.Minute},
		{delay: 5 * time.Second, hang: true},
	}
	changes, _ := runScripted(t, []listReply{{list: cmList("10", "", cm("a", "5"))}}, watches, 10*time.Minute)
	wantChanges(t, changes, "Synced/@0s")
}

// Throttling is a loss of touch like any other: a short spell raises no
// alarm (TestHealthRecoversAndNotifies), a long one is Degraded(Throttled)
// once it has lasted the grace period, not at the first 429. When a watch
// finally opens and stays open the grace period (a quiet resource sends
// nothing), the loss is over.
func TestHealthThrottledOnlyAfterTheGrace(t *testing.T) {
	throttled := watchReply{err: apierrors.NewTooManyRequests("slow down", 4)}
	watches := []watchReply{throttled, throttled, throttled, {hang: true}}
	changes, h := runScripted(t, []listReply{{list: cmList("10", "", cm("a", "5"))}}, watches, time.Minute)
	if len(changes) != 3 || changes[0] != "Synced/@0s" || changes[1] != "Degraded/Throttled@10s" {
		t.Fatalf("health changes %q", changes)
	}
	// The fourth request goes out after 4 + 4 + 4-6.4 s and opens.
	if !strings.HasPrefix(changes[2], "Synced/@2") {
		t.Fatalf("health changes %q: want Synced 10 s after the watch opened", changes)
	}
	if !apierrors.IsTooManyRequests(h.LastError) {
		t.Fatalf("LastError %v", h.LastError)
	}
}

// A relist by WatchList after a lost watch: the WatchList's watch goes on
// as the cycle's watch, quiet. No alarm: the loss ends when that watch has
// stayed open the grace period, not a report a grace period after the sync.
func TestHealthNoAlarmAfterQuietWatchListRelist(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &healthLog{start: time.Now()}
		lw := newScript(nil, []watchReply{
			{events: []watch.Event{ev(watch.Added, cm("a", "5")), bookmark("10", true), errEvent(internalStatus())}},
			{events: []watch.Event{ev(watch.Added, cm("a", "5")), bookmark("12", true)}, hang: true},
		})
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), ReflectorOptions{OnHealthChange: log.record})
		_, stop := startReflector(t, r)
		time.Sleep(time.Minute)
		synctest.Wait()
		stop()
		wantChanges(t, log.changes, "Synced/@0s", "Stopped/@1m0s")
		if got := lw.recorded(); len(got) != 2 {
			t.Fatalf("calls %q, want two WatchLists", got)
		}
	})
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
	lw := newScript(lists, watches)
	var changes []string
	runTimed(t, lw, func(*Reflector) {}, 2*time.Minute, &changes)
	if len(changes) != 3 || changes[1] != "Degraded/WatchFailing@10s" || !strings.HasPrefix(changes[2], "Synced/@3") {
		t.Fatalf("health changes %q", changes)
	}
	if gap := lw.times[4].Sub(lw.times[3]); gap > 1600*time.Millisecond {
		t.Fatalf("the re-watch after the 429 came %v later: the backoff the outage grew was kept", gap)
	}
}

// A cycle cancelled while its watch request is in flight forgets the
// tentative loss with it: a later cycle whose LIST takes long is not
// reported Degraded for the old request.
func TestCancelledCycleLeavesNoLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := newScript([]listReply{{list: cmList("10", "", cm("a", "5"))}}, []watchReply{{closeAfter: 5 * time.Minute}, {delay: time.Hour}})
		log := &healthLog{start: time.Now()}
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), ReflectorOptions{UseWatchList: ptr.To(false), OnHealthChange: log.record})
		cycle := func(ctx context.Context) { _ = r.ListAndWatchWithContext(ctx) }
		_, stop := startRun(t, cycle)
		time.Sleep(5*time.Minute + 5*time.Second)
		stop()
		_, stop = startRun(t, cycle)
		time.Sleep(time.Minute)
		synctest.Wait()
		stop()
		lw.inflight.Wait()
		wantChanges(t, log.changes, "Synced/@0s")
	})
}

// A watch that ends with an error and a relist that completes within the
// grace period: no Degraded at all.
func TestHealthNoAlarmWhenRelistIsQuick(t *testing.T) {
	lists := []listReply{
		{list: cmList("10", "", cm("a", "5"))},
		{list: cmList("20", "", cm("a", "15")), delay: 5 * time.Second},
	}
	watches := []watchReply{{events: []watch.Event{ev(watch.Modified, cm("a", "11")), errEvent(internalStatus())}}}
	changes, _ := runScripted(t, lists, watches, time.Minute)
	wantChanges(t, changes, "Synced/@0s")
}

// No false alarm: a quiet resource whose watches the server ends at their
// timeout (minutes, nothing in them) and that are re-opened at once.
func TestHealthNoAlarmOnQuietResource(t *testing.T) {
	var watches []watchReply
	for range 3 {
		watches = append(watches, watchReply{closeAfter: 5 * time.Minute})
	}
	changes, _ := runScripted(t, []listReply{{list: cmList("10", "", cm("a", "5"))}}, watches, 20*time.Minute)
	wantChanges(t, changes, "Synced/@0s")
}

// No false alarm: an initial LIST that takes a minute stays Syncing.
func TestHealthNoAlarmOnLongInitialSync(t *testing.T) {
	lists := []listReply{{list: cmList("10", "", cm("a", "5")), delay: time.Minute}}
	changes, _ := runScripted(t, lists, nil, 2*time.Minute)
	wantChanges(t, changes, "Synced/@1m0s")
}

// On cachetest's server and its faults.

// A brief burst: the server closes the watch cleanly and the next two
// watch opens are refused; the third, a few seconds later after the
// backoff, works. That is what a healthy cluster does now and then, and
// it must raise no alarm at all: health stays Synced throughout (contract
// (c), new part: 429 and refused connections no longer degrade at once).
func TestHealthFaultBriefRefusalsRaiseNoAlarm(t *testing.T) {
	for _, tc := range refusedWatches {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newFaultRig(t, cachetest.Options{}, nil)
				from := g.refuseWatches(2, tc.fault)
				g.sleepUntil(from + time.Minute)
				if n := g.srv.Stats().Faults[tc.fault.Kind()]; n != 2 {
					t.Fatalf("%d watch opens failed, want 2", n)
				}
				g.expectNoAlarm(from, "two "+tc.name+" watch opens")
				g.write()
				synctest.Wait()
				g.expect(Synced, ReasonNone, "an event flowed after the burst")
				g.expectConverged()
				g.expectNoEarlyRetries()
			})
		})
	}
}

// No false alarms (contract: a watch the server ends at its timeout and
// that is re-opened at once, a quiet resource, a 410 followed by a relist
// that completes within the grace period stay Synced).
//
// Quiet: one write after the sync, then nothing for 30 minutes. The first
// watch gets bookmarks (so the Reflector knows the server sends them);
// cachetest ends every watch cleanly at the timeoutSeconds it asked for
// (5-10 minutes) and the Reflector re-opens it at once; later watches
// start at the newest resourceVersion and, as on kube-apiserver, get no
// bookmark at all. None of that is a stall or a loss.
//
// 410: the watch's resourceVersion is compacted away (an outage of a few
// seconds during which etcd compacted), and the relist completes after
// the first backoff.
func TestHealthFaultNoFalseAlarms(t *testing.T) {
	t.Run("quiet resource, watches ended at their timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g := newFaultRig(t, cachetest.Options{}, nil)
			g.write()
			g.sleepUntil(30 * time.Minute)
			g.expectNoAlarm(0, "30 minutes of a quiet resource")
			st := g.r.Stats()
			if st.WatchEnds[WatchClosed] < 3 || st.WatchEnds[WatchStalled] != 0 || g.srv.Stats().Lists != 1 {
				t.Fatalf("30 minutes in: watch ends %v, %d LISTs; want at least 3 closed at their timeout, none stalled, no relist", st.WatchEnds, g.srv.Stats().Lists)
			}
			if g.srv.Stats().Bookmarks == 0 {
				t.Fatal("no bookmark reached the Reflector: the stall detector was never armed")
			}
			g.expectConverged()
		})
	})
	t.Run("410 and a quick relist", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g := newFaultRig(t, cachetest.Options{}, nil)
			from := g.expire(35*time.Second, cachetest.InternalError(), 0)
			g.sleepUntil(from + time.Minute)
			g.expectNoAlarm(0, "a 410 followed by a relist within the grace period")
			if st := g.r.Stats(); st.WatchEnds[WatchExpired] != 1 || st.Lists[ListExpired] != 1 {
				t.Fatalf("watch ends %v, lists %v; want one 410 and one relist for it", st.WatchEnds, st.Lists)
			}
			g.expectConverged()
		})
	})
}
