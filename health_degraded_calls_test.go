package cache

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// Degraded when a call blocks or keeps failing past the grace period: LIST,
// WatchList, watch opens, relists. Scripted calls (cachetest's faults:
// health_degraded_calls_faults_test.go).

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
