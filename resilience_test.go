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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kreflector/cache/cachetest"
)

// zeroSource makes a rand.Rand whose draws are all zero, so that watch
// timeouts are exactly MinWatchTimeout.
type zeroSource struct{}

func (zeroSource) Uint64() uint64 { return 0 }

// A watch that delivers nothing, after an earlier one delivered bookmarks,
// is not stalled by the window alone: kube-apiserver sends a watch that
// starts at the newest resourceVersion of a resource nobody writes no
// bookmark at all. It is stalled once it stays open a window past the
// timeout it asked for, which the server would have honoured.
func TestWatchSilentFromTheStartIsStalledPastItsTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := newScript([]listReply{{list: cmList("10", "", cm("a", "5"))}}, []watchReply{
			{events: []watch.Event{bookmark("12", false)}, closeAfter: time.Minute},
			{hang: true}, // quiet resource, or lost in transit: not a byte
		})
		lw.noWL = true
		opts := noWatchList
		opts.Rand = rand.New(zeroSource{})
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), opts)
		startReflector(t, r)
		<-lw.drained // the silent watch is open, asked to end in 5 minutes
		time.Sleep(defaultMinWatchTimeout + defaultStallWindow - time.Second)
		synctest.Wait()
		if h := r.Health(); h.State != Synced {
			t.Fatalf("a silent watch was called stalled before its timeout and a window passed: %+v", h)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		h := r.Health()
		if h.State != Degraded || h.Reason != ReasonStalled || !errors.Is(h.LastError, ErrWatchStalled) {
			t.Fatalf("a watch open and silent a window past its timeout: health %+v", h)
		}
		if !strings.Contains(h.LastError.Error(), "after the timeout") {
			t.Fatalf("the error should say the watch outlived its timeout: %v", h.LastError)
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
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), noWatchList)
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
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), noWatchList)
		runUntilDrained(t, r, lw)
		if calls := lw.recorded(); len(calls) != 3 || !strings.HasPrefix(calls[2], `WATCH rv="11"`) {
			t.Fatalf("calls %q: want the re-watch from 11", calls)
		}
		if rv := r.LastSyncResourceVersion(); rv != "11" {
			t.Fatalf("LastSyncResourceVersion = %q", rv)
		}
	})
}
