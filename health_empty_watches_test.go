package cache

import (
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"
)

// Watches that close with nothing in them (a dead server behind a load
// balancer) and stalls count as lost time. Scripted calls (cachetest's
// faults: health_empty_watches_faults_test.go).

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
