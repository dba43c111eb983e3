package cache

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// runScripted runs a Reflector (LIST then WATCH, default grace) on the
// script for d of synctest time and returns its health changes and last
// health.
func runScripted(t *testing.T, lists []listReply, watches []watchReply, d time.Duration) ([]string, Health) {
	lw := newScript(slices.Clone(lists), slices.Clone(watches))
	return runOn(t, lw, &lw.inflight, nil, nil, d)
}

// runOn runs a Reflector (LIST then WATCH, default grace) on lw for d of
// synctest time, with rnd as its randomness (nil: its own) and after set
// (if any) has adjusted it; it waits for lw's calls in flight and returns
// the health changes and last health.
func runOn(t *testing.T, lw ListerWatcher, inflight *sync.WaitGroup, rnd *rand.Rand, set func(*Reflector), d time.Duration) ([]string, Health) {
	var changes []string
	var last Health
	synctest.Test(t, func(t *testing.T) {
		log := &healthLog{start: time.Now()}
		opts := ReflectorOptions{UseWatchList: ptr.To(false), OnHealthChange: log.record, Rand: rnd}
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, &recordingStore{}, opts)
		if set != nil {
			set(r)
		}
		_, stop := startReflector(t, r)
		time.Sleep(d)
		synctest.Wait()
		stop()
		inflight.Wait()
		changes, last = log.changes, r.Health()
	})
	return changes, last
}

func wantChanges(t *testing.T, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("health changes\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
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
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, &recordingStore{}, ReflectorOptions{HealthGrace: 2 * time.Second, OnHealthChange: log.record})
		_, stop := startReflector(t, r)
		<-lw.drained
		synctest.Wait()
		stop()
		if len(log.changes) != 2 || log.changes[0] != "Degraded/ListFailing@2s" || !strings.HasPrefix(log.changes[1], "Synced/") {
			t.Fatalf("health changes %q", log.changes)
		}
		if h := r.Health(); !errors.Is(h.LastError, errWatchListIncomplete) || !h.HasSynced {
			t.Fatalf("health %+v", h)
		}
	})
}
