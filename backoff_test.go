package cache

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestBackoffDefaultCurve(t *testing.T) {
	b := newBackoff(defaultBackoff(), defaultBackoffReset)
	now := time.Unix(1000, 0)
	want := []time.Duration{800, 1600, 3200, 6400, 12800, 25600, 30000, 30000}
	for i, w := range want {
		if got := b.next(now, 0); got != w*time.Millisecond {
			t.Fatalf("step %d: got %v, want %v", i, got, w*time.Millisecond)
		}
		now = now.Add(time.Second)
	}
}

func TestBackoffJitterStretchesUpToDouble(t *testing.T) {
	b := newBackoff(defaultBackoff(), defaultBackoffReset)
	now := time.Unix(1000, 0)
	if got := b.next(now, 0.5); got != 1200*time.Millisecond {
		t.Fatalf("half jitter on 0.8s: got %v, want 1.2s", got)
	}
	if got := b.next(now, 0.999); got >= 3200*time.Millisecond || got < 1600*time.Millisecond {
		t.Fatalf("jittered second step %v outside [1.6s, 3.2s)", got)
	}
}

func TestBackoffResetsAfterQuietPeriod(t *testing.T) {
	b := newBackoff(defaultBackoff(), defaultBackoffReset)
	now := time.Unix(1000, 0)
	for range 5 {
		b.next(now, 0)
		now = now.Add(time.Minute)
	}
	if got := b.next(now, 0); got != 25600*time.Millisecond {
		t.Fatalf("steps a minute apart must keep growing: got %v", got)
	}
	now = now.Add(defaultBackoffReset + time.Second)
	if got := b.next(now, 0); got != defaultBackoffInit {
		t.Fatalf("after two quiet minutes: got %v, want %v", got, defaultBackoffInit)
	}
}

func TestBackoffCustomConfig(t *testing.T) {
	b := newBackoff(wait.Backoff{Duration: time.Second, Factor: 3, Steps: 2}, 0)
	now := time.Unix(0, 0)
	var got []time.Duration
	for range 4 {
		got = append(got, b.next(now, 0.7))
		now = now.Add(time.Hour)
	}
	want := []time.Duration{time.Second, 3 * time.Second, 9 * time.Second, 9 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v (no jitter configured, steps exhausted keep the last duration, no reset)", got, want)
		}
	}
}

// timerCounter is a fake clock that counts the timers made on it.
type timerCounter struct {
	*clocktesting.FakeClock
	timers int
}

func (c *timerCounter) NewTimer(d time.Duration) clock.Timer {
	c.timers++
	return c.FakeClock.NewTimer(d)
}

func TestSleepOnAnEndedContextStartsNoTimer(t *testing.T) {
	c := &timerCounter{FakeClock: clocktesting.NewFakeClock(time.Unix(0, 0))}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if sleepOn(ctx, c, time.Second) {
		t.Fatal("sleepOn on an ended context reported a full sleep")
	}
	if c.timers != 0 {
		t.Fatalf("sleepOn on an ended context made %d timers", c.timers)
	}
}
