package cache

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache/cachetest"
)

// How health changes are reported: notifications, no change for a repeated
// failure, no allocation when nobody waits, the grace's edge cases.

// A refusal (404) is reported at once, and a sync ends it; a throttled
// watch that the re-watch after one backoff delay mends raises no alarm
// (it is a loss of touch shorter than the grace period).
func TestHealthRecoversAndNotifies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := newScript(
			[]listReply{{err: apierrors.NewNotFound(cmGVR, "")}, {list: cmList("5", "", cm("a", "1"))}},
			[]watchReply{{err: tooManyRequests()}})
		var seen []string
		opts := ReflectorOptions{UseWatchList: ptr.To(false), OnHealthChange: func(h Health) {
			seen = append(seen, h.State.String()+"/"+string(h.Reason))
		}}
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), opts)
		ctx, stop := startReflector(t, r)
		if err := r.WaitForSync(ctx); err != nil {
			t.Fatal(err)
		}
		<-lw.drained
		synctest.Wait()
		stop()
		want := []string{"Degraded/NotFound", "Synced/", "Stopped/"}
		if len(seen) != len(want) {
			t.Fatalf("health changes %q, want %q", seen, want)
		}
		for i := range want {
			if seen[i] != want[i] {
				t.Fatalf("health changes %q, want %q", seen, want)
			}
		}
		if got := lw.recorded(); len(got) != 4 || !strings.HasPrefix(got[2], "WATCH") || !strings.HasPrefix(got[3], "WATCH") {
			t.Fatalf("calls %q, want LIST, LIST, the throttled WATCH and its retry", got)
		}
		// LastError is the latest failure's, the 429 that raised no alarm;
		// the stop keeps it.
		if h := r.Health(); h.State != Stopped || !r.HasSynced() || !apierrors.IsTooManyRequests(h.LastError) {
			t.Fatalf("final health %+v", h)
		}
	})
}

func TestHealthChangesNobodyWaitsForDoNotAllocate(t *testing.T) {
	h := newHealth(time.Unix(0, 0), nil)
	err := errors.New("down")
	allocs := testing.AllocsPerRun(20, func() {
		h.set(Degraded, ReasonListFailing, err, time.Unix(1, 0))
		h.healthy(time.Unix(2, 0))
	})
	if allocs != 0 {
		t.Fatalf("a change nobody waits for allocated %v times", allocs)
	}
	_, changed := h.next()
	h.set(Degraded, ReasonListFailing, err, time.Unix(3, 0))
	select {
	case <-changed:
	default:
		t.Fatal("a waiter's channel was not closed by the change")
	}
}

// A failure repeated with an error that reads the same (each attempt makes
// a new value) is no change: OnHealthChange is not called again. A new
// text is a change.
func TestRepeatedFailureIsNoChange(t *testing.T) {
	var calls int
	h := newHealth(time.Unix(0, 0), func(Health) { calls++ })
	for i := range 5 {
		h.set(Degraded, ReasonThrottled, errors.New("slow down"), time.Unix(int64(i), 0))
	}
	if calls != 1 {
		t.Fatalf("%d notifications for one failure repeated", calls)
	}
	h.set(Degraded, ReasonThrottled, errors.New("slower"), time.Unix(9, 0))
	if calls != 2 || h.snapshot().LastError.Error() != "slower" {
		t.Fatalf("%d notifications, LastError %v", calls, h.snapshot().LastError)
	}
}

// With a negative HealthGrace a loss is reported at once and a sync ends
// it; the relist's watch request is no loss of its own (no blip).
func TestNegativeGraceReportsAtOnce(t *testing.T) {
	lists := []listReply{{list: cmList("10", "", cm("a", "5"))}, {list: cmList("20", "", cm("a", "15"))}}
	watches := []watchReply{{events: []watch.Event{ev(watch.Modified, cm("a", "11")), errEvent(internalStatus())}}, {delay: time.Minute, hang: true}}
	lw := newScript(lists, watches)
	var changes []string
	runTimed(t, lw, func(r *Reflector) { r.live.grace = -1 }, 2*time.Minute, &changes)
	// The relist follows the first backoff delay (0.8-1.6 s).
	if len(changes) != 3 || changes[1] != "Degraded/WatchFailing@0s" || !strings.HasPrefix(changes[2], "Synced/@") {
		t.Fatalf("health changes %q", changes)
	}
}

// The liveness timer is made once and re-armed after that: a Reflector
// arms it at every watch request, so making one each time would cost an
// allocation per request.
func TestLivenessTimerIsMadeOnce(t *testing.T) {
	l := liveness{grace: time.Hour}
	l.arm(timerDue, time.Hour)
	allocs := testing.AllocsPerRun(50, func() {
		l.calling(time.Now())
		l.opened()
		l.arm(timerDue, time.Hour)
		l.stopTimer()
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per arm and stop after the first", allocs)
	}
	if l.C() != nil {
		t.Fatal("a stopped timer's channel is selected on")
	}
}
