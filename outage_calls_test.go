package cache_test

import (
	"testing"
	"testing/synctest"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/cachetest"
)

// Health when the server answers calls with failures, on cachetest's
// server and synctest's clock (the rig is in outage_rig_test.go; watch
// faults are in outage_faults_test.go).

// expectNoAlarm fails the test if health was Degraded at any time since
// from.
func (g *faultRig) expectNoAlarm(from time.Duration, what string) {
	g.t.Helper()
	if d := g.degraded(from, nil); len(d) > 0 {
		g.t.Fatalf("%s must raise no alarm, but health was Degraded(%s) %v after %v; changes:%s", what, d[0].h.Reason, d[0].at-from, from, g.history())
	}
}

// refusedWatches are the call failures a server (or its absence) answers
// watch opens with for a while: 429 with a Retry-After of 1 s (the max
// in-flight filter of a busy kube-apiserver, once the REST client's own
// retries are used up) and refused connections (an apiserver restarting:
// nothing listens on the port for a few seconds).
var refusedWatches = []struct {
	name   string
	fault  cachetest.Fault
	reason cache.DegradedReason
	is     func(error) bool
}{
	{"429", cachetest.TooManyRequests(time.Second), cache.ReasonThrottled, apierrors.IsTooManyRequests},
	{"refused", cachetest.ConnectionRefused(), cache.ReasonUnreachable, utilnet.IsConnectionRefused},
}

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
				g.expect(cache.Synced, cache.ReasonNone, "an event flowed after the burst")
				g.expectConverged()
				g.expectNoEarlyRetries()
			})
		})
	}
}

// A long refusal: thirty watch opens in a row are refused (an overloaded
// apiserver shedding watches; an apiserver down for many minutes). The
// loss of touch begins at the first failure and is reported once it has
// lasted the grace period (10 s), during a backoff, with the latest
// failure's reason and error, not at the first failure; Synced again when
// data flows once watches open again.
func TestHealthFaultLongRefusalsDegradeAfterGrace(t *testing.T) {
	for _, tc := range refusedWatches {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newFaultRig(t, cachetest.Options{}, nil)
				from := g.refuseWatches(30, tc.fault)
				g.sleepUntil(from + 9*time.Second)
				g.expectNoAlarm(from, "the first 9 s of "+tc.name+" watch opens (within the grace period)")
				g.sleepUntil(from + 11*time.Second)
				g.expectFirstDegraded(from, 10*time.Second, 11*time.Second, tc.reason, tc.is, "thirty "+tc.name+" watch opens")
				for end := from + time.Hour; g.srv.Stats().Faults[tc.fault.Kind()] < 30 && g.now() < end; {
					g.sleepUntil(g.now() + 10*time.Second)
				}
				if n := g.srv.Stats().Faults[tc.fault.Kind()]; n != 30 {
					t.Fatalf("an hour in, %d of 30 watch opens have failed", n)
				}
				g.expect(cache.Degraded, tc.reason, "the refusals are over but no data has flowed")
				g.write()
				g.awaitSynced(3 * time.Minute)
				g.expect(cache.Synced, cache.ReasonNone, "an event flowed after the refusals")
				g.expectConverged()
				g.expectNoEarlyRetries()
			})
		})
	}
}

// refuseWatches cuts the rig's watch 30 s in, the next n watch opens
// failing with fault; it returns the time of the cut.
func (g *faultRig) refuseWatches(n int, fault cachetest.Fault) time.Duration {
	g.t.Helper()
	g.sleepUntil(30 * time.Second)
	from := g.now()
	g.srv.FailNext(cachetest.VerbWatch, n, fault)
	g.srv.CloseWatches()
	return from
}

// expectNoEarlyRetries fails the test if the Reflector made a call before
// a Retry-After the server gave it had passed.
func (g *faultRig) expectNoEarlyRetries() {
	g.t.Helper()
	if n := g.srv.Stats().EarlyRetries; n != 0 {
		g.t.Fatalf("%d calls before a Retry-After had passed", n)
	}
}

// expire makes the rig's watch end with a 410 at from: the watch is hung
// (a connection lost in transit) while the server writes twice and
// compacts its history past the watch's resourceVersion, then closed, so
// the re-watch gets 410 Expired and the Reflector relists. The watch has
// been open for longer than the grace period, so its end is not taken for
// an empty watch. It returns from, the time of the close.
func (g *faultRig) expire(at time.Duration, listFault cachetest.Fault, listFailures int) time.Duration {
	g.t.Helper()
	g.sleepUntil(at - 5*time.Second)
	g.srv.HangWatches()
	g.write()
	g.write()
	if err := g.srv.Compact(g.srv.ResourceVersion()); err != nil {
		g.t.Fatal(err)
	}
	g.srv.FailNext(cachetest.VerbList, listFailures, listFault)
	g.sleepUntil(at)
	g.srv.CloseWatches()
	return at
}

// changesFrom returns every change recorded from from on.
func (g *faultRig) changesFrom(from time.Duration) []healthAt {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []healthAt
	for _, c := range g.changes {
		if c.at >= from {
			out = append(out, c)
		}
	}
	return out
}

// The relist after a 410 is refused with 403 twice (the Reflector's
// ServiceAccount lost its RBAC rights for a moment, as during a rollout
// of roles): Degraded(Forbidden) at once, at the first refused LIST (after
// the first backoff, 0.8-1.6 s), and Synced when a LIST succeeds, with
// nothing in between (contract (a)).
func TestHealthFaultForbiddenRelist(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newFaultRig(t, cachetest.Options{}, nil)
		from := g.expire(35*time.Second, cachetest.Forbidden(), 2)
		g.sleepUntil(from + 2*time.Second)
		g.expectFirstDegraded(from, 0, 1600*time.Millisecond, cache.ReasonForbidden, apierrors.IsForbidden, "a relist LIST refused with 403")
		g.awaitSynced(2 * time.Minute)
		g.expect(cache.Synced, cache.ReasonNone, "a relist LIST succeeded after two 403s")
		changes := g.changesFrom(from)
		for _, c := range changes[:len(changes)-1] {
			if c.h.State != cache.Degraded || c.h.Reason != cache.ReasonForbidden {
				t.Fatalf("between the first 403 and the sync, health was %s(%s) at %v; changes:%s", c.h.State, c.h.Reason, c.at, g.history())
			}
		}
		if n := g.srv.Stats().Faults[cachetest.FaultForbidden]; n != 2 {
			t.Fatalf("%d LISTs refused, want 2", n)
		}
		g.expectConverged()
	})
}

// The relist after a 410 fails with 500 four times (etcd overloaded or
// being defragmented behind the apiserver) and then succeeds. The 410
// begins a loss of touch; the failing LISTs continue it. Degraded with
// the latest failure's reason, ListFailing, and the 500 as LastError, a
// grace period (10 s) after the 410, not at the first failed LIST, and
// never with an older reason afterwards; Synced when a LIST succeeds
// (contract (c)).
func TestHealthFaultFailingRelistDegradesAfterGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newFaultRig(t, cachetest.Options{}, nil)
		from := g.expire(35*time.Second, cachetest.InternalError(), 4)
		g.sleepUntil(from + 9*time.Second)
		g.expectNoAlarm(from, "a relist failing with 500 for 9 s after a 410 (within the grace period)")
		g.sleepUntil(from + 11*time.Second)
		g.expectFirstDegraded(from, 10*time.Second, 11*time.Second, cache.ReasonListFailing, apierrors.IsInternalError, "a relist failing with 500 after a 410")
		g.awaitSynced(3 * time.Minute)
		g.expect(cache.Synced, cache.ReasonNone, "a relist LIST succeeded after four 500s")
		for _, d := range g.degraded(from, nil) {
			if d.h.Reason != cache.ReasonListFailing || !apierrors.IsInternalError(d.h.LastError) {
				t.Fatalf("while the relist failed, health was Degraded(%s) at %v with LastError %v; the latest failure was a LIST's 500; changes:%s",
					d.h.Reason, d.at, d.h.LastError, g.history())
			}
		}
		if n := g.srv.Stats().Faults[cachetest.FaultInternalError]; n != 4 {
			t.Fatalf("%d LISTs failed, want 4", n)
		}
		g.expectConverged()
	})
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
			if st.WatchEnds[cache.WatchClosed] < 3 || st.WatchEnds[cache.WatchStalled] != 0 || g.srv.Stats().Lists != 1 {
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
			if st := g.r.Stats(); st.WatchEnds[cache.WatchExpired] != 1 || st.Lists[cache.ListExpired] != 1 {
				t.Fatalf("watch ends %v, lists %v; want one 410 and one relist for it", st.WatchEnds, st.Lists)
			}
			g.expectConverged()
		})
	})
}
