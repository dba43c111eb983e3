package cache

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// A watch that never delivers anything is stalled too, once an earlier
// watch has shown that the server sends bookmarks.
func TestWatchSilentFromTheStartIsStalledOnceBookmarksAreKnown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := newScript([]listReply{{list: cmList("10", "", cm("a", "5"))}}, []watchReply{
			{events: []watch.Event{bookmark("12", false)}, closeAfter: time.Minute},
			{hang: true}, // lost in transit: not a byte, ever
		})
		lw.noWL = true
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, &recordingStore{}, noWatchList)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { r.RunWithContext(ctx); close(done) }()
		defer func() { cancel(); <-done }()
		<-lw.drained // the silent watch is open
		time.Sleep(defaultStallWindow - time.Second)
		synctest.Wait()
		if h := r.Health(); h.State != Synced {
			t.Fatalf("stalled before the window ended: %+v", h)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if h := r.Health(); h.State != Degraded || h.Reason != ReasonStalled {
			t.Fatalf("a watch silent for the whole window after bookmarks were seen: health %+v", h)
		}
		if calls := lw.recorded(); len(calls) != 4 || !strings.HasPrefix(calls[3], `WATCH rv="12"`) {
			t.Fatalf("calls %q: want a re-watch from the last bookmark", calls)
		}
	})
}

// A resourceVersion the server cannot parse (from an object with a broken
// one) is given up for a consistent read, instead of being asked for
// forever as client-go does.
func TestRejectedResourceVersionIsGivenUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "", nil)
		lw := newScript(
			[]listReply{{list: cmList("10", "", cm("a", "5"))}, {err: invalid}, {list: cmList("20", "", cm("a", "15"))}},
			[]watchReply{
				{events: []watch.Event{ev(watch.Modified, cm("a", "garbage"))}, closeAfter: 2 * time.Second},
				{err: apierrors.NewBadRequest("resourceVersion: invalid value 'garbage'")},
			})
		lw.noWL = true
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, &recordingStore{}, noWatchList)
		runUntilDrained(t, r, lw)
		calls := lw.recorded()
		want := []string{`LIST rv="0"`, `WATCH rv="10"`, `WATCH rv="garbage"`, `LIST rv="garbage"`, `LIST rv=""`, `WATCH rv="20"`}
		if len(calls) != len(want) {
			t.Fatalf("calls %q, want %q", calls, want)
		}
		for i := range want {
			if !strings.HasPrefix(calls[i], want[i]) {
				t.Fatalf("call %d = %q, want %s…", i, calls[i], want[i])
			}
		}
		if n := r.Stats().Lists[ListInvalidRV]; n != 1 {
			t.Fatalf("lists for an invalid RV: %d", n)
		}
	})
}

// An event without a resourceVersion does not move the resume position:
// watching from "" would replay the current state and lose deletions.
func TestEventWithoutResourceVersionKeepsThePosition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := newScript([]listReply{{list: cmList("10", "", cm("a", "5"))}}, []watchReply{
			{events: []watch.Event{ev(watch.Modified, cm("a", "11")), ev(watch.Modified, cm("a", ""))}, closeAfter: 2 * time.Second},
		})
		lw.noWL = true
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, &recordingStore{}, noWatchList)
		runUntilDrained(t, r, lw)
		if calls := lw.recorded(); len(calls) != 3 || !strings.HasPrefix(calls[2], `WATCH rv="11"`) {
			t.Fatalf("calls %q: want the re-watch from 11", calls)
		}
		if rv := r.LastSyncResourceVersion(); rv != "11" {
			t.Fatalf("LastSyncResourceVersion = %q", rv)
		}
	})
}
