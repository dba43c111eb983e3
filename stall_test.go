package cache

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
)

func TestSilentWatchAfterBookmarkIsStalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := newScript([]listReply{{list: cmList("10", "", cm("a", "5"))}}, []watchReply{
			{events: []watch.Event{bookmark("12", false)}, hang: true},
			{events: []watch.Event{ev(watch.Modified, cm("a", "13"))}, hang: true},
		})
		lw.noWL = true
		var states []string
		opts := noWatchList
		opts.OnHealthChange = func(h Health) { states = append(states, h.State.String()+"/"+string(h.Reason)) }
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, &recordingStore{}, opts)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { r.RunWithContext(ctx); close(done) }()
		time.Sleep(defaultStallWindow - time.Second)
		synctest.Wait()
		if n := len(lw.recorded()); n != 2 {
			t.Fatalf("re-watched before the window ended: %q", lw.recorded())
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		cancel()
		<-done
		calls := lw.recorded()
		if len(calls) != 3 || calls[2] != `WATCH rv="12" bookmarks timeoutInRange=true` {
			t.Fatalf("calls %q: want a re-watch from the bookmark's RV", calls)
		}
		want := []string{"Synced/", "Degraded/Stalled", "Synced/"}
		if len(states) != len(want) || states[1] != want[1] || states[2] != want[2] {
			t.Fatalf("health changes %q, want %q", states, want)
		}
	})
}

func TestSilentWatchWithoutBookmarksIsNotStalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := newScript([]listReply{{list: cmList("10", "", cm("a", "5"))}}, []watchReply{
			{events: []watch.Event{ev(watch.Modified, cm("a", "11"))}, hang: true},
		})
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, &recordingStore{}, noWatchList)
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Minute)
		defer cancel()
		r.RunWithContext(ctx)
		if calls := lw.recorded(); len(calls) != 2 {
			t.Fatalf("a server that never sends bookmarks must not be called stalled: %q", calls)
		}
	})
}
