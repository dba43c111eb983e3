package cache

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/kreflector/cache/cachetest"
)

// No false alarms: what mends itself within the grace period raises none. On
// cachetest's server and its faults (scripted calls:
// health_no_false_alarm_test.go).

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
