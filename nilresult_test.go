package cache

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache/cachetest"
)

// A ListerWatcher that answers a call with neither a result nor an error
// is broken, but the Reflector does not crash on it: the call has failed
// with an error wrapping ErrNilResult, with all that a failed call brings
// (health, backoff, a retry). These tests panic without that.

// nilLists are the two ways a List can return nothing: a nil interface,
// and a typed client's nil pointer in a non-nil one.
var nilLists = []struct {
	name string
	list runtime.Object
}{
	{"nil", nil},
	{"nil pointer", (*corev1.ConfigMapList)(nil)},
}

// nilWatches are the same for a Watch.
var nilWatches = []struct {
	name  string
	reply watchReply
}{
	{"nil", watchReply{none: true}},
	{"nil pointer", watchReply{w: (*watch.FakeWatcher)(nil)}},
}

// nilRun is a Reflector under test with what it told: its health changes
// and the errors its cycles ended with.
type nilRun struct {
	r    *Reflector
	log  *healthLog
	mu   sync.Mutex
	errs []error
}

// newNilRun builds a Reflector of ConfigMaps on lw with opts, recording
// its health changes and the errors its cycles end with.
func newNilRun(lw ListerWatcher, opts ReflectorOptions) *nilRun {
	n := &nilRun{log: &healthLog{start: time.Now()}}
	opts.OnHealthChange = n.log.record
	opts.WatchErrorHandler = func(_ context.Context, _ *Reflector, err error) {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.errs = append(n.errs, err)
	}
	n.r = NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), opts)
	return n
}

// ended is how many cycles ended with an error wrapping ErrNilResult, and
// how many ended with an error at all.
func (n *nilRun) ended() (nilResults, all int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, err := range n.errs {
		if errors.Is(err, ErrNilResult) {
			nilResults++
		}
	}
	return nilResults, len(n.errs)
}

// wantBackoff fails the test unless each call of verb on lw came at least
// the initial backoff delay after the one before.
func wantBackoff(t *testing.T, lw *scriptLW, verb string, since time.Time) {
	t.Helper()
	at := lw.arrivals(verb, since)
	for i := 1; i < len(at); i++ {
		if gap := at[i] - at[i-1]; gap < defaultBackoffInit {
			t.Fatalf("%s %d came %v after the one before, want a backoff of at least %v: arrivals %v", verb, i+1, gap, defaultBackoffInit, at)
		}
	}
}

// A List that returns nothing fails the LIST: retried after a backoff,
// Degraded(ListFailing) once that has lasted the grace period, and the
// first list that comes syncs the store.
func TestNilListFailsTheList(t *testing.T) {
	for _, tc := range nilLists {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lists := make([]listReply, 5, 6)
				for i := range lists {
					lists[i] = listReply{list: tc.list}
				}
				lw := newScript(append(lists, listReply{list: cmList("10", "", cm("a", "5"))}), nil)
				lw.noWL = true
				start := time.Now()
				n := newNilRun(lw, noWatchList)
				runUntilDrained(t, n.r, lw)
				if got := countCalls(lw, "LIST"); got != 6 {
					t.Fatalf("%d LISTs, want 6 (5 failed, then one that syncs): %q", got, lw.recorded())
				}
				wantBackoff(t, lw, "LIST", start)
				if nils, all := n.ended(); nils != 5 || all != 5 {
					t.Fatalf("%d cycles ended with ErrNilResult, %d with an error; want 5 and 5 (%v)", nils, all, n.errs)
				}
				if !strings.Contains(n.errs[0].Error(), "failed to list *v1.ConfigMap: the ListerWatcher's List returned nil and no error") {
					t.Fatalf("the cycle's error does not say what happened: %v", n.errs[0])
				}
				wantChanges(t, n.log.changes[:1], "Degraded/ListFailing@10s")
				h := n.r.Health()
				if !h.HasSynced || !errors.Is(h.LastError, ErrNilResult) {
					t.Fatalf("after the list that came, health %v; want synced, with the nil List as its last error", h)
				}
			})
		})
	}
}

// A continued page that is nothing fails the paginated LIST (it is not a
// transient failure retried from its token), which is made again from the
// first page after a backoff.
func TestNilPageFailsThePagedList(t *testing.T) {
	for _, tc := range nilLists {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lw := newScript([]listReply{
					{list: cmList("10", "c1", cm("a", "5"))},
					{list: tc.list},
					{list: cmList("11", "c2", cm("a", "5"))},
					{list: cmList("", "", cm("b", "11"))},
				}, nil)
				lw.noWL = true
				n := newNilRun(lw, noWatchList)
				runUntilDrained(t, n.r, lw)
				want := []string{
					`LIST rv="0" limit=500`, `LIST rv="" limit=500 continue=c1`,
					`LIST rv="0" limit=500`, `LIST rv="" limit=500 continue=c2`,
				}
				if calls := lw.recorded(); len(calls) != 5 || !slices.Equal(calls[:4], want) || !strings.HasPrefix(calls[4], `WATCH rv="11"`) {
					t.Fatalf("calls %q; want %q and a WATCH from 11", calls, want)
				}
				if nils, all := n.ended(); nils != 1 || all != 1 {
					t.Fatalf("%d cycles ended with ErrNilResult, %d with an error; want 1 and 1 (%v)", nils, all, n.errs)
				}
				if st := n.r.Stats(); st.LastListItems != 2 || st.Lists[ListRetry] != 1 {
					t.Fatalf("stats %v (lists %v); want the retried LIST's 2 objects", st, st.Lists)
				}
			})
		})
	}
}

// A Watch that returns nothing has failed to open: the cycle ends with
// that error, and the next one, after a backoff, relists and watches
// again. Watches that keep failing so are reported (WatchFailing) once a
// grace period has passed with no watch working.
func TestNilWatchFailsToOpen(t *testing.T) {
	for _, tc := range nilWatches {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lw := &scriptLW{noWL: true, listAgain: cmList("10", "", cm("a", "5")), watchAgain: &tc.reply}
				start := time.Now()
				n := newNilRun(lw, noWatchList)
				startReflector(t, n.r)
				time.Sleep(30 * time.Second)
				synctest.Wait()
				watches := countCalls(lw, "WATCH")
				if watches < 3 || countCalls(lw, "LIST") != watches {
					t.Fatalf("calls %q; want at least 3 WATCHes, each after its own LIST", lw.recorded())
				}
				wantBackoff(t, lw, "WATCH", start)
				if nils, all := n.ended(); nils != watches || all != watches {
					t.Fatalf("%d cycles ended with ErrNilResult, %d with an error; want %d and %d (%v)", nils, all, watches, watches, n.errs)
				}
				wantDegradedByNil(t, n, ReasonWatchFailing)
			})
		})
	}
}

// The same on the WatchList path: a WatchList that returns nothing falls
// back to a LIST (as after any other error opening it), and the watch
// after that LIST fails as above.
func TestNilWatchListFallsBackToList(t *testing.T) {
	for _, tc := range nilWatches {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lw := &scriptLW{listAgain: cmList("10", "", cm("a", "5")), watchAgain: &tc.reply}
				n := newNilRun(lw, ReflectorOptions{UseWatchList: ptr.To(true)})
				startReflector(t, n.r)
				time.Sleep(30 * time.Second)
				synctest.Wait()
				calls := lw.recorded()
				if len(calls) < 6 || !strings.Contains(calls[0], "initial=true") || !strings.HasPrefix(calls[1], "LIST") ||
					!strings.HasPrefix(calls[2], `WATCH rv="10"`) {
					t.Fatalf("calls %q; want a WatchList, a LIST, a WATCH, and again", calls)
				}
				if nils, all := n.ended(); nils == 0 || nils != all {
					t.Fatalf("%d cycles ended with ErrNilResult, %d with an error (%v)", nils, all, n.errs)
				}
				wantDegradedByNil(t, n, ReasonWatchFailing)
			})
		})
	}
}

// wantDegradedByNil fails the test unless n's running Reflector was
// reported Degraded(reason) a grace period into its run, and is so still,
// with a nil result as its last error.
func wantDegradedByNil(t *testing.T, n *nilRun, reason DegradedReason) {
	t.Helper()
	n.log.mu.Lock()
	changes := slices.Clone(n.log.changes)
	n.log.mu.Unlock()
	if !slices.Contains(changes, "Degraded/"+string(reason)+"@10s") {
		t.Fatalf("health changes %q; want Degraded(%s) a grace period in", changes, reason)
	}
	if h := n.r.Health(); h.State != Degraded || h.Reason != reason || !errors.Is(h.LastError, ErrNilResult) {
		t.Fatalf("health %v; want Degraded(%s) by the nil result", h, reason)
	}
}

// A Watch the Reflector stopped waiting for (its Run ended) that then
// returns nothing is dropped: there is no watch to stop.
func TestNilWatchAfterRunEndedIsDropped(t *testing.T) {
	for _, tc := range nilWatches {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				block := make(chan struct{})
				reply := tc.reply
				reply.block = block
				lw := newScript([]listReply{{list: cmList("10", "", cm("a", "5"))}}, []watchReply{reply})
				lw.noWL = true
				n := newNilRun(lw, noWatchList)
				_, stop := startReflector(t, n.r)
				synctest.Wait() // the WATCH is in flight, ignoring its context
				stop()
				close(block)
				synctest.Wait()
				if calls := lw.recorded(); len(calls) != 2 {
					t.Fatalf("calls %q; want the LIST and the WATCH", calls)
				}
			})
		})
	}
}
