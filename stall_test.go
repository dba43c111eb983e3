package cache

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kreflector/cache/cachetest"
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
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), opts)
		_, stop := startReflector(t, r)
		time.Sleep(defaultStallWindow - time.Second)
		synctest.Wait()
		if n := len(lw.recorded()); n != 2 {
			t.Fatalf("re-watched before the window ended: %q", lw.recorded())
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		stop()
		calls := lw.recorded()
		if len(calls) != 3 || calls[2] != `WATCH rv="12" bookmarks timeoutInRange=true` {
			t.Fatalf("calls %q: want a re-watch from the bookmark's RV", calls)
		}
		want := []string{"Synced/", "Degraded/Stalled", "Synced/", "Stopped/"}
		if !slices.Equal(states, want) {
			t.Fatalf("health changes %q, want %q", states, want)
		}
	})
}

func TestSilentWatchWithoutBookmarksIsNotStalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := newScript([]listReply{{list: cmList("10", "", cm("a", "5"))}}, []watchReply{
			{events: []watch.Event{ev(watch.Modified, cm("a", "11"))}, hang: true},
		})
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), noWatchList)
		runFor(t, r, 30*time.Minute)
		if calls := lw.recorded(); len(calls) != 2 {
			t.Fatalf("a server that never sends bookmarks must not be called stalled: %q", calls)
		}
	})
}

// The initial-events-end bookmark of a WatchList shows that the server
// sends bookmarks, but not that this watch will get more: on a resource
// nobody writes, kube-apiserver sends none after it. So the window alone
// does not end the watch; outliving its timeout by a window does.
func TestWatchListEndBookmarkDoesNotStartTheWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := newScript(nil, []watchReply{{events: []watch.Event{ev(watch.Added, cm("a", "1")), bookmark("2", true)}, hang: true}})
		opts := ReflectorOptions{Rand: rand.New(zeroSource{})}
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), opts)
		startReflector(t, r)
		<-lw.drained
		time.Sleep(defaultMinWatchTimeout + defaultStallWindow - time.Second)
		synctest.Wait()
		if h := r.Health(); h.State != Synced || len(lw.recorded()) != 1 {
			t.Fatalf("quiet WatchList stream ended before its timeout and a window: %+v, calls %q", h, lw.recorded())
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if h := r.Health(); h.Reason != ReasonStalled {
			t.Fatalf("a WatchList stream open a window past its timeout: health %+v", h)
		}
		if calls := lw.recorded(); len(calls) != 2 || !strings.HasPrefix(calls[1], `WATCH rv="2"`) {
			t.Fatalf("calls %q: want a re-watch from the end bookmark's RV", calls)
		}
	})
}

// The detector's own rules, on a fake clock.
func TestStallDetectorRules(t *testing.T) {
	const window = 3 * time.Minute
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fires := func(d *stallDetector) bool {
		select {
		case <-d.C():
			return true
		default:
			return false
		}
	}
	// after advances the clock and reports whether the watch is stalled,
	// checking only when the timer fires, as the streamer does.
	after := func(c *clocktesting.FakeClock, d *stallDetector, by time.Duration) bool {
		c.Step(by)
		return fires(d) && d.stalled() != nil
	}

	t.Run("a bookmark during a watch armed by its end starts the window", func(t *testing.T) {
		c := clocktesting.NewFakeClock(t0)
		d := &stallDetector{clock: c, window: window}
		d.expectEnd(t0.Add(10 * time.Minute))
		c.Step(time.Minute)
		d.activity(true)
		if after(c, d, window-time.Second) {
			t.Fatal("stalled before the window")
		}
		if !after(c, d, 2*time.Second) {
			t.Fatal("silent for a window after a bookmark, yet not stalled")
		}
	})
	t.Run("events past the promised end keep the watch alive", func(t *testing.T) {
		c := clocktesting.NewFakeClock(t0)
		d := &stallDetector{clock: c, window: window}
		d.expectEnd(t0.Add(5 * time.Minute))
		c.Step(5*time.Minute + window - time.Second)
		d.activity(false)
		if after(c, d, 2*time.Second) {
			t.Fatal("stalled although an event came a second ago")
		}
		if !after(c, d, window) {
			t.Fatal("silent for a window after the last event past the end, yet not stalled")
		}
	})
	t.Run("events alone do not arm it", func(t *testing.T) {
		c := clocktesting.NewFakeClock(t0)
		d := &stallDetector{clock: c, window: window}
		d.activity(false)
		c.Step(time.Hour)
		if d.C() != nil {
			t.Fatal("armed without a bookmark or an expected end")
		}
	})
	t.Run("a negative window turns it off", func(t *testing.T) {
		c := clocktesting.NewFakeClock(t0)
		d := &stallDetector{clock: c, window: -1}
		d.expectEnd(t0.Add(time.Minute))
		d.activity(true)
		if d.C() != nil {
			t.Fatal("armed with detection off")
		}
	})
}

// After a stall, a re-watch that the server ends cleanly (at its timeout)
// without an event shows the server reaches us again: on a resource nobody
// writes no data would ever flow to end Degraded(Stalled) otherwise.
func TestCleanCloseAfterStallEndsDegraded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := newScript([]listReply{{list: cmList("10", "", cm("a", "5"))}}, []watchReply{
			{events: []watch.Event{bookmark("12", false)}, hang: true},
			{closeAfter: 5 * time.Minute},
		})
		lw.noWL = true
		var states []string
		opts := noWatchList
		opts.OnHealthChange = func(h Health) { states = append(states, h.State.String()+"/"+string(h.Reason)) }
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), opts)
		startReflector(t, r)
		time.Sleep(defaultStallWindow + time.Minute)
		synctest.Wait()
		if h := r.Health(); h.Reason != ReasonStalled {
			t.Fatalf("want Degraded(Stalled) while the re-watch is silent, got %+v", h)
		}
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		if h := r.Health(); h.State != Synced {
			t.Fatalf("the re-watch was ended cleanly by the server, yet health is %+v", h)
		}
		want := []string{"Synced/", "Degraded/Stalled", "Synced/"}
		if strings.Join(states, " ") != strings.Join(want, " ") {
			t.Fatalf("health changes %q, want %q", states, want)
		}
	})
}
