package cache

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache/cachetest"
)

// Tests written for client-go's Reflector with an injected fake clock
// must behave the same with ours: these drive ours the way such tests
// drive client-go's. Each runs in a synctest bubble only so that a
// Reflector waiting on a fake timer nobody advances fails the test as a
// deadlock instead of hanging it.

// A watch that ends with a 500 before delivering anything, within
// MaxInternalErrorRetryDuration, with a fake clock that only the watch
// requests advance (a second each): client-go's Reflector re-watches at
// once until the window has passed, then the cycle ends. Ours must too,
// with a zero backoff and with the default one alike: the clock is the
// user's, so nothing may wait on it.
func TestInternalErrorRewatchesAtOnceOnAnInjectedClock(t *testing.T) {
	for _, tc := range []struct {
		name    string
		backoff *wait.Backoff
	}{
		{"zero backoff", &wait.Backoff{}},
		{"default backoff", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fc := clocktesting.NewFakeClock(time.Unix(0, 0))
				status := apierrors.NewInternalError(errors.New("etcdserver: no leader")).Status()
				lw := &scriptLW{listAgain: cmList("1", ""), watchAgain: &watchReply{events: []watch.Event{errEvent(&status)}, hang: true}}
				lw.onCall = func(call string) {
					if strings.HasPrefix(call, "WATCH") {
						fc.Step(time.Second)
					}
				}
				opts := ReflectorOptions{Clock: fc, Backoff: tc.backoff, UseWatchList: ptr.To(false)}
				r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), opts)
				r.MaxInternalErrorRetryDuration = 20 * time.Second
				if err := r.ListAndWatchWithContext(t.Context()); err != nil {
					t.Fatalf("ListAndWatch: %v", err)
				}
				// The first 500 at 1 s opens the window; the watches at
				// 2..21 s are within it, the one at 22 s is not.
				if watches := countCalls(lw, "WATCH"); watches != 22 {
					t.Fatalf("%d watch requests, want 22 (a re-watch for every second of the 20 s window)", watches)
				}
			})
		})
	}
}

// With a zero backoff nothing waits on the clock at all: LISTs that fail
// are repeated by Run, and refused watch requests re-sent, without the
// injected clock (which nobody advances) being asked for a timer.
func TestZeroBackoffWaitsOnNoTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fc := clocktesting.NewFakeClock(time.Unix(0, 0))
		refused := listReply{err: syscall.ECONNREFUSED}
		lw := newScript([]listReply{refused, refused, {list: cmList("1", "")}},
			[]watchReply{{err: syscall.ECONNREFUSED}, {err: syscall.ECONNREFUSED}}) // then a watch opens
		opts := ReflectorOptions{Clock: fc, Backoff: &wait.Backoff{}, UseWatchList: ptr.To(false)}
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), opts)
		_, stop := startReflector(t, r)
		<-lw.drained // the watch opened
		stop()
		if calls := lw.verbs(); len(calls) != 6 {
			t.Fatalf("calls %q, want two failed LISTs, one that works, two refused watches and one that opens", calls)
		}
	})
}

// The way client-go's tests drive a fake clock: a goroutine that steps it
// whenever a timer is pending, by a step that grows like the backoff,
// while the first n watch requests are refused, each after a 1 ms round
// trip. client-go's Reflector keeps only its backoff timer on the clock
// then, so each step ends one backoff delay and the time that passes on
// the clock is the sum of the steps. Ours must keep nothing else there
// either: a timer of its own pending during a request would be stepped
// too, and the Reflector would take longer on the fake clock than
// client-go's.
func TestRefusedWatchesBackOffOnASteppedFakeClock(t *testing.T) {
	const maxBackoff = 50 * time.Millisecond
	for _, tc := range []struct {
		refused      int
		lower, upper time.Duration
	}{
		{5, 32 * time.Millisecond, 64 * time.Millisecond}, // below the cap: the steps double
		{40, 35 * 2 * maxBackoff, 40 * 2 * maxBackoff},    // at the cap: the steps are flat
	} {
		t.Run(fmt.Sprint(tc.refused, " refused"), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fc := clocktesting.NewFakeClock(time.Unix(0, 0))
				done := make(chan struct{})
				var wg sync.WaitGroup
				wg.Go(func() { stepWhileWaiting(fc, 2*maxBackoff, done) })
				ctx, cancel := context.WithCancel(t.Context())
				lw := &scriptLW{listAgain: cmList("1", ""), watches: slices.Repeat([]watchReply{{err: syscall.ECONNREFUSED}}, tc.refused)}
				lw.onCall = func(call string) {
					if strings.HasPrefix(call, "WATCH") {
						time.Sleep(time.Millisecond) // the round trip
						if countCalls(lw, "WATCH") > tc.refused {
							cancel() // the watch that opens
						}
					}
				}
				backoff := wait.Backoff{Duration: time.Millisecond, Cap: maxBackoff, Steps: 1000, Factor: 2, Jitter: 1}
				opts := ReflectorOptions{Clock: fc, Backoff: &backoff, UseWatchList: ptr.To(false), Rand: rand.New(rand.NewPCG(1, 2))}
				r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), opts)
				start := fc.Now()
				err := r.ListAndWatchWithContext(ctx)
				elapsed := fc.Since(start)
				close(done)
				wg.Wait()
				if err != nil {
					t.Fatalf("ListAndWatch: %v", err)
				}
				if elapsed < tc.lower || elapsed > tc.upper {
					t.Fatalf("%v passed on the fake clock, want %v to %v", elapsed, tc.lower, tc.upper)
				}
			})
		})
	}
}

// stepWhileWaiting steps fc whenever it has a timer pending, by 2 ms, then
// 4, 8, ... up to limit, looking every 100 us until done closes.
func stepWhileWaiting(fc *clocktesting.FakeClock, limit time.Duration, done <-chan struct{}) {
	step := 2 * time.Millisecond
	for {
		select {
		case <-done:
			return
		case <-time.After(100 * time.Microsecond):
		}
		if fc.HasWaiters() {
			fc.Step(step)
			step = min(2*step, limit)
		}
	}
}

// With a fake clock nobody advances, client-go's Run still repeats a
// failed cycle (it waits between cycles on the real clock), and so must
// ours; so must our retry of a failed LIST page, which client-go does not
// have. Here the first LIST fails, and the second one's second page
// fails and is asked for again.
func TestRunAndPageRetriesWaitOnTheRealClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fc := clocktesting.NewFakeClock(time.Unix(0, 0))
		replies := []listReply{
			{err: syscall.ECONNREFUSED},
			{list: cmList("10", "tok", cm("a", "5"))},
			{err: syscall.ECONNRESET},
			{list: cmList("10", "", cm("b", "6"))},
		}
		lw := &scriptLW{lists: slices.Clone(replies)}
		opts := ReflectorOptions{Clock: fc, UseWatchList: ptr.To(false)}
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), opts)
		r.WatchListPageSize = 1
		_, stop := startReflector(t, r)
		time.Sleep(time.Minute) // real (synctest) time; the fake clock stays put
		stop()
		if left := len(replies) - countCalls(lw, "LIST"); left != 0 {
			t.Fatalf("%d LIST calls still to come after a minute of real time", left)
		}
	})
}

// While a watch is open, client-go's Reflector (without a resync period)
// has no timer on its clock. Ours has health's probation of a watch that
// follows a failure and stall detection once the server has sent a
// bookmark: both must be on the real clock, not the injected one.
func TestOpenWatchArmsNothingOnTheInjectedClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fc := clocktesting.NewFakeClock(time.Unix(0, 0))
		lw := newScript([]listReply{{list: cmList("10", "", cm("a", "5"))}}, []watchReply{
			{events: []watch.Event{bookmark("11", false)}}, // the server sends bookmarks
			{err: syscall.ECONNREFUSED},                    // a loss of touch
			{hang: true},                                   // on probation, and watched for a stall
		})
		lw.noWL = true
		opts := ReflectorOptions{Clock: fc, Backoff: &wait.Backoff{}}
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), opts)
		_, stop := startReflector(t, r)
		<-lw.drained
		synctest.Wait()
		if fc.HasWaiters() {
			t.Error("a timer is pending on the injected clock while a watch is open")
		}
		stop()
		if got := r.Stats().WatchesOpened; got != 2 {
			t.Fatalf("%d watches opened, want 2", got)
		}
	})
}
