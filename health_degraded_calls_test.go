package cache

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache/cachetest"
)

// Degraded when a call blocks or keeps failing past the grace period: LIST,
// WatchList, watch opens, relists. On scripted calls, then on cachetest's
// server and its faults.

// A request to open a watch that blocks for a minute (the REST client
// retrying TLS handshakes to a server that is gone) after the server ended
// the previous watch at its timeout: no failure has been seen, yet the
// Reflector is blind. Degraded(WatchFailing) a grace period after the
// request began, while it is still in flight; Synced again once the watch
// that finally opens has stayed open for the grace period.
func TestHealthDegradedWhileWatchOpenBlocks(t *testing.T) {
	watches := []watchReply{
		{closeAfter: 5 * time.Minute},
		{delay: time.Minute, hang: true},
	}
	changes, h := runScripted(t, []listReply{{list: cmList("10", "", cm("a", "5"))}}, watches, 10*time.Minute)
	wantChanges(t, changes, "Synced/@0s", "Degraded/WatchFailing@5m10s", "Synced/@6m10s")
	if !errors.Is(h.LastError, errWatchOpenBlocked) {
		t.Fatalf("LastError %v", h.LastError)
	}
}

// After a lost watch and a quick relist, the request for the next watch
// blocks: reported a grace period after the sync, as a request in flight.
func TestHealthDegradedWhenWatchAfterRelistBlocks(t *testing.T) {
	lists := []listReply{{list: cmList("10", "", cm("a", "5"))}, {list: cmList("20", "", cm("a", "15"))}}
	watches := []watchReply{
		{events: []watch.Event{ev(watch.Modified, cm("a", "11")), errEvent(internalStatus())}},
		{delay: time.Minute, hang: true},
	}
	changes, h := runScripted(t, lists, watches, 2*time.Minute)
	// The relist follows the first backoff delay (0.8-1.6 s).
	if len(changes) != 3 || changes[0] != "Synced/@0s" || !strings.HasPrefix(changes[1], "Degraded/WatchFailing@1") || !strings.HasPrefix(changes[2], "Synced/@1m") {
		t.Fatalf("health changes %q", changes)
	}
	if !errors.Is(h.LastError, errWatchOpenBlocked) {
		t.Fatalf("LastError %v", h.LastError)
	}
}

// A watch that ends badly, followed by a relist that blocks for 30 s:
// Degraded once the grace period has passed, while the LIST is still in
// flight, and Synced again when it completes. The relist starts after the
// first backoff (0.8-1.6 s) and takes 30 s. The watch ends either with an
// error (as client-go reports a connection lost mid-stream: a 500 from its
// decoder) or with a 410 (its resourceVersion compacted away, as after an
// outage: the server answered, but the store is behind until the relist).
func TestHealthDegradedWhileRelistBlocks(t *testing.T) {
	for _, tc := range []struct {
		name    string
		end     *metav1.Status
		lastErr func(error) bool
	}{
		{"500", internalStatus(), apierrors.IsInternalError},
		{"410", expiredStatus(), apierrors.IsResourceExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lists := []listReply{
				{list: cmList("10", "", cm("a", "5"))},
				{list: cmList("20", "", cm("a", "15")), delay: 30 * time.Second},
			}
			watches := []watchReply{{events: []watch.Event{ev(watch.Modified, cm("a", "11")), errEvent(tc.end)}}}
			changes, h := runScripted(t, lists, watches, time.Minute)
			if len(changes) != 3 || changes[0] != "Synced/@0s" || changes[1] != "Degraded/WatchFailing@10s" || !strings.HasPrefix(changes[2], "Synced/@3") {
				t.Fatalf("health changes %q", changes)
			}
			if h.State != Synced || !tc.lastErr(h.LastError) {
				t.Fatalf("final health %+v", h)
			}
		})
	}
}

// A WatchList the server keeps closing before its initial events end is a
// loss of touch: Degraded(ListFailing) once it has lasted the grace period
// (2 s here), during the backoff between attempts, and Synced once the
// fallback LIST completes.
func TestHealthDegradedWhileWatchListNeverEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var watches []watchReply
		for range maxIncompleteWatchLists {
			watches = append(watches, watchReply{events: []watch.Event{ev(watch.Added, cm("a", "5"))}})
		}
		lw := newScript([]listReply{{list: cmList("10", "", cm("a", "5"))}}, watches)
		log := &healthLog{start: time.Now()}
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), ReflectorOptions{HealthGrace: 2 * time.Second, OnHealthChange: log.record})
		runUntilDrained(t, r, lw)
		if len(log.changes) != 3 || log.changes[0] != "Degraded/ListFailing@2s" || !strings.HasPrefix(log.changes[1], "Synced/") || !strings.HasPrefix(log.changes[2], "Stopped/") {
			t.Fatalf("health changes %q", log.changes)
		}
		if h := r.Health(); !errors.Is(h.LastError, errWatchListIncomplete) || !h.HasSynced {
			t.Fatalf("health %+v", h)
		}
	})
}

// On cachetest's server and its faults.

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
				g.expectDegradedAfterGrace(from, tc.reason, tc.is, "thirty "+tc.name+" watch opens")
				for end := from + time.Hour; g.srv.Stats().Faults[tc.fault.Kind()] < 30 && g.now() < end; {
					g.sleepUntil(g.now() + 10*time.Second)
				}
				if n := g.srv.Stats().Faults[tc.fault.Kind()]; n != 30 {
					t.Fatalf("an hour in, %d of 30 watch opens have failed", n)
				}
				g.expect(Degraded, tc.reason, "the refusals are over but no data has flowed")
				g.write()
				g.awaitSynced(3 * time.Minute)
				g.expect(Synced, ReasonNone, "an event flowed after the refusals")
				g.expectConverged()
				g.expectNoEarlyRetries()
			})
		})
	}
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
		g.expectFirstDegraded(from, 0, 1600*time.Millisecond, ReasonForbidden, apierrors.IsForbidden, "a relist LIST refused with 403")
		g.awaitSynced(2 * time.Minute)
		g.expect(Synced, ReasonNone, "a relist LIST succeeded after two 403s")
		changes := g.changesFrom(from)
		for _, c := range changes[:len(changes)-1] {
			if c.h.State != Degraded || c.h.Reason != ReasonForbidden {
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
		g.expectDegradedAfterGrace(from, ReasonListFailing, apierrors.IsInternalError, "a relist failing with 500 after a 410")
		g.awaitSynced(3 * time.Minute)
		g.expect(Synced, ReasonNone, "a relist LIST succeeded after four 500s")
		for _, d := range g.degraded(from, nil) {
			if d.h.Reason != ReasonListFailing || !apierrors.IsInternalError(d.h.LastError) {
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

// A watch open that blocks: the server closes the watch cleanly (as at a
// restart) and the re-watch call then sits in flight for a minute (as a
// REST client retrying TLS handshakes against a server that is not back,
// or a request stuck in a proxy). Nothing failed before, so the loss of
// touch begins with the call: Degraded(WatchFailing) a grace period (10 s)
// after it began, while it is still in flight. When it opens, the watch
// alone proves nothing; Synced comes when an event flows on it.
func TestHealthFaultBlockingWatchOpenDegradesAfterGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newFaultRig(t, cachetest.Options{}, nil)
		g.sleepUntil(30 * time.Second)
		g.srv.Delay(cachetest.VerbWatch, time.Minute)
		cut := g.now()
		g.srv.CloseWatches()
		synctest.Wait()
		g.srv.Delay(cachetest.VerbWatch, 0) // only the re-watch in flight is slow
		if n := g.srv.Stats().Faults[cachetest.FaultDelay]; n != 1 {
			t.Fatalf("%d watch calls delayed, want the re-watch", n)
		}
		g.sleepUntil(cut + 9*time.Second)
		g.expect(Synced, ReasonNone, "9 s into a blocked watch open (within the grace period)")
		g.sleepUntil(cut + 11*time.Second)
		g.expectFirstDegraded(cut, 10*time.Second, 11*time.Second, ReasonWatchFailing, notNil,
			"a watch open blocked for a minute after a clean close (contract (d))")
		g.sleepUntil(cut + time.Minute + time.Second)
		if n := g.r.Stats().WatchesOpened; n != 2 {
			t.Fatalf("%d watches opened 61 s after the cut, want 2 (the blocked one has opened)", n)
		}
		g.expect(Degraded, ReasonWatchFailing, "the blocked watch has opened but nothing flowed on it")
		g.write()
		synctest.Wait()
		g.expect(Synced, ReasonNone, "an event flowed on the watch")
		g.expectConverged()
	})
}

// The outage on cachetest's server, on synctest's clock: the
// watch hangs (a dead connection the client does not notice) while the
// server moves on and compacts; when the watch finally ends, the re-watch
// gets 410 and the relist is slow (the server delays every LIST by 40 s).
// Health goes Degraded(WatchFailing) a grace period into the relist, with
// the LIST still in flight, and Synced when it completes, with the store
// equal to the server's state.
func TestHealthDuringSlowRelistAfterCompaction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := cachetest.NewServer(cachetest.Options{})
		defer srv.Close()
		cms := srv.Resource(cachetest.Type{Resource: "configmaps", Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}})
		seed := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "seed"}}
		if _, err := cms.Create(t.Context(), seed, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		store := NewStore(MetaNamespaceKeyFunc)
		start := time.Now()
		var changes []healthAt
		r := NewReflectorWithOptions(cms, &corev1.ConfigMap{}, store, ReflectorOptions{
			Rand:           rand.New(rand.NewPCG(3, 3)),
			UseWatchList:   ptr.To(false),
			OnHealthChange: func(h Health) { changes = append(changes, healthAt{h, time.Since(start)}) },
		})
		ctx, stop := startReflector(t, r)
		defer stop()
		if err := r.WaitForSync(ctx); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		srv.HangWatches()
		for _, name := range []string{"a", "b", "c"} {
			if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := srv.Compact(srv.ResourceVersion()); err != nil {
			t.Fatal(err)
		}
		srv.Delay(cachetest.VerbList, 40*time.Second)
		// Hung longer than the grace period, so its end is not taken for a
		// watch that came back empty: what follows is the 410's doing.
		time.Sleep(30 * time.Second)
		cut := time.Since(start)
		srv.CloseWatches()
		time.Sleep(20 * time.Second)
		synctest.Wait()
		if h := r.Health(); h.State != Degraded || h.Reason != ReasonWatchFailing {
			t.Fatalf("20 s into a 40 s relist after a 410, health is %v(%s), want Degraded(WatchFailing); changes %v", h.State, h.Reason, changes)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if h := r.Health(); h.State != Synced {
			t.Fatalf("after the relist, health is %v(%s): %v", h.State, h.Reason, h.LastError)
		}
		if n := r.Stats().WatchEnds[WatchExpired]; n != 1 {
			t.Fatalf("%d watches ended expired, want the re-watch's 410", n)
		}
		objs, _ := cms.Objects()
		if d := cachetest.Compare(objs, store.List()); !d.Empty() {
			t.Fatalf("store after the relist: %s", d)
		}
		var degradedAt time.Duration
		for _, c := range changes {
			if c.h.State == Degraded {
				degradedAt = c.at - cut
				break
			}
		}
		// The relist starts after the first backoff (0.8-1.6 s); the loss
		// starts at the 410 and is reported a grace period (10 s) later.
		if degradedAt < 10*time.Second || degradedAt > 12*time.Second {
			t.Fatalf("Degraded %v after the watch was cut, want about 10 s (the grace period); changes %v", degradedAt, changes)
		}
	})
}
