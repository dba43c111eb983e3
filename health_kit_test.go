package cache

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache/cachetest"
)

// The health tests' kit: runners that record the health changes of a
// Reflector on scripted calls, on synctest's clock.

// runTimed runs a Reflector (LIST then WATCH, default grace) on lw for d
// of synctest time, after set has adjusted it, and records its health
// changes in changes. Its randomness has a fixed seed: the backoff's
// jitter, and so every time, is the same on every run.
func runTimed(t *testing.T, lw *scriptLW, set func(*Reflector), d time.Duration, changes *[]string) {
	*changes, _ = runOn(t, lw, &lw.inflight, rand.New(rand.NewPCG(1, 2)), set, d)
}

// runScripted runs a Reflector (LIST then WATCH, default grace) on the
// script for d of synctest time and returns its health changes and last
// health.
func runScripted(t *testing.T, lists []listReply, watches []watchReply, d time.Duration) ([]string, Health) {
	lw := newScript(slices.Clone(lists), slices.Clone(watches))
	return runOn(t, lw, &lw.inflight, nil, nil, d)
}

// runOn runs a Reflector (LIST then WATCH, default grace) on lw for d of
// synctest time, with rnd as its randomness (nil: its own) and after set
// (if any) has adjusted it, then stops it; it waits for lw's calls in
// flight and returns the health changes and last health of the run, and
// checks that the stop was reported (Stopped, with HasSynced as it was).
func runOn(t *testing.T, lw ListerWatcher, inflight *sync.WaitGroup, rnd *rand.Rand, set func(*Reflector), d time.Duration) ([]string, Health) {
	var changes []string
	var last Health
	synctest.Test(t, func(t *testing.T) {
		log := &healthLog{start: time.Now()}
		opts := ReflectorOptions{UseWatchList: ptr.To(false), OnHealthChange: log.record, Rand: rnd}
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), opts)
		if set != nil {
			set(r)
		}
		_, stop := startReflector(t, r)
		time.Sleep(d)
		synctest.Wait()
		changes, last = log.recorded(), r.Health()
		stop()
		inflight.Wait()
		after, want := log.recorded()[len(changes):], fmt.Sprintf("Stopped/@%v", d.Round(100*time.Millisecond))
		if h := r.Health(); h.State != Stopped || h.HasSynced != last.HasSynced || !slices.Equal(after, []string{want}) {
			t.Errorf("after the stop: health %v, changes %q; want one, %s", h, after, want)
		}
	})
	return changes, last
}

func wantChanges(t *testing.T, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("health changes\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}
