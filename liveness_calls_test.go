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
	"k8s.io/apimachinery/pkg/watch"
)

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

// A server that ends every watch with a 500 before it delivers anything,
// within MaxInternalErrorRetryDuration: client-go re-watches at once, in a
// tight loop; ours backs off between such watches (0.8 s doubling), and
// reports the loss once it has lasted the grace period.
func TestInternalErrorLoopBacksOff(t *testing.T) {
	var watches []watchReply
	for range 50 {
		watches = append(watches, watchReply{events: []watch.Event{errEvent(internalStatus())}})
	}
	lw := &timedLW{scriptLW: newScript([]listReply{{list: cmList("10", "", cm("a", "5"))}}, watches)}
	var changes []string
	runTimed(t, lw, func(r *Reflector) { r.MaxInternalErrorRetryDuration = time.Hour }, 10*time.Second, &changes)
	n := strings.Count(strings.Join(lw.verbs, " "), "WATCH")
	if n < 3 || n > 6 {
		t.Fatalf("%d watch requests in the first 10 s, want a backoff's worth (3-6)", n)
	}
	wantChanges(t, changes, "Synced/@0s", "Degraded/WatchFailing@10s")
}

// runTimed runs a Reflector (LIST then WATCH, default grace) on lw for d
// of synctest time, after set has adjusted it, and records its health
// changes in changes. Its randomness has a fixed seed: the backoff's
// jitter, and so every time, is the same on every run.
func runTimed(t *testing.T, lw *timedLW, set func(*Reflector), d time.Duration, changes *[]string) {
	*changes, _ = runOn(t, lw, &lw.inflight, rand.New(rand.NewPCG(1, 2)), set, d)
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
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, &recordingStore{}, ReflectorOptions{OnHealthChange: log.record})
		_, stop := startReflector(t, r)
		time.Sleep(time.Minute)
		synctest.Wait()
		stop()
		wantChanges(t, log.changes, "Synced/@0s")
		if got := lw.recorded(); len(got) != 2 {
			t.Fatalf("calls %q, want two WatchLists", got)
		}
	})
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
