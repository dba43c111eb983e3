package cachetest_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"testing/synctest"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache/cachetest"
)

func TestFailNextAnswersLikeTheRealServer(t *testing.T) {
	_, cms := newServer(t, cachetest.Options{})
	custom := errors.New("custom")
	for _, tc := range []struct {
		fault cachetest.Fault
		is    func(error) bool
	}{
		{cachetest.TooManyRequests(1500 * time.Millisecond), func(err error) bool {
			secs, ok := apierrors.SuggestsClientDelay(err)
			return apierrors.IsTooManyRequests(err) && ok && secs == 2
		}},
		{cachetest.InternalError(), apierrors.IsInternalError},
		{cachetest.Forbidden(), func(err error) bool {
			return apierrors.IsForbidden(err) && err.Error() ==
				`configmaps is forbidden: User "system:serviceaccount:default:cachetest" cannot list resource "configmaps" in API group "" at the cluster scope`
		}},
		{cachetest.ConnectionRefused(), func(err error) bool {
			var op *net.OpError
			return utilnet.IsConnectionRefused(err) && errors.As(err, &op) && op.Op == "dial"
		}},
		{cachetest.Timeout(), func(err error) bool {
			return apierrors.IsTimeout(err) && !apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge)
		}},
		{cachetest.Error(custom), func(err error) bool { return err == custom }},
	} {
		cms.Server().FailNext(cachetest.VerbList, 1, tc.fault)
		if _, err := cms.List(metav1.ListOptions{}); !tc.is(err) {
			t.Errorf("%s: got %v", tc.fault.Kind(), err)
		}
	}
	if _, err := cms.List(metav1.ListOptions{}); err != nil {
		t.Fatalf("faults must be used up: %v", err)
	}
}

func TestFailNextCountsAndQueues(t *testing.T) {
	synctest.Test(t, testFailNextCountsAndQueues)
}

func testFailNextCountsAndQueues(t *testing.T) {
	srv, cms := newServer(t, cachetest.Options{})
	ctx := t.Context()
	srv.FailNext(cachetest.VerbWatch, 2, cachetest.InternalError())
	srv.FailNext(cachetest.VerbWatch, 1, cachetest.Forbidden())
	srv.FailNext(cachetest.VerbCreate, 1, cachetest.Timeout())
	if _, err := cms.Create(ctx, cm("ns", "a"), metav1.CreateOptions{}); !apierrors.IsTimeout(err) {
		t.Fatalf("create: %v", err)
	}
	var got []bool
	for range 4 {
		_, err := cms.Watch(metav1.ListOptions{TimeoutSeconds: ptr.To[int64](1)})
		got = append(got, apierrors.IsInternalError(err), apierrors.IsForbidden(err))
	}
	want := []bool{true, false, true, false, false, true, false, false}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("internal/forbidden per call %v, want %v", got, want)
		}
	}
	srv.FailNext(cachetest.VerbList, 5, cachetest.InternalError())
	srv.ClearFaults()
	if _, err := cms.List(metav1.ListOptions{}); err != nil {
		t.Fatalf("after ClearFaults: %v", err)
	}
	st := srv.Stats()
	if st.Faults[cachetest.FaultInternalError] != 2 || st.Faults[cachetest.FaultForbidden] != 1 || st.Calls[cachetest.VerbWatch] != 4 {
		t.Fatalf("stats %+v", st)
	}
}

func TestDelayWaitsOnTheClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cms := newServer(t, cachetest.Options{})
		srv.Delay(cachetest.VerbList, 7*time.Second)
		start := time.Now()
		if _, err := cms.List(metav1.ListOptions{}); err != nil || time.Since(start) != 7*time.Second {
			t.Fatalf("delayed list: %v after %v", err, time.Since(start))
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if _, err := cms.ListWithContext(ctx, metav1.ListOptions{}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a caller giving up: %v", err)
		}
		srv.Delay(cachetest.VerbList, 0)
		start = time.Now()
		if _, err := cms.List(metav1.ListOptions{}); err != nil || time.Since(start) != 0 {
			t.Fatalf("undelayed list: %v after %v", err, time.Since(start))
		}
	})
}

func TestCloseWatchesEndsThemCleanly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cms := newServer(t, cachetest.Options{})
		a, b := openWatch(t, cms, metav1.ListOptions{}), openWatch(t, cms, metav1.ListOptions{})
		if n := srv.CloseWatches(); n != 2 {
			t.Fatalf("closed %d", n)
		}
		expectClosed(t, a)
		expectClosed(t, b)
		create(t, cms, "ns/a")
		expectEvents(t, openWatch(t, cms, metav1.ListOptions{ResourceVersion: "0"}), "ADDED ns/a@1")
	})
}

func TestHungWatchesStaySilentUntilTheirTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cms := newServer(t, cachetest.Options{})
		w := openWatch(t, cms, metav1.ListOptions{AllowWatchBookmarks: true, TimeoutSeconds: ptr.To[int64](600)})
		if n := srv.HangWatches(); n != 1 {
			t.Fatalf("hung %d", n)
		}
		srv.ClearFaults()
		create(t, cms, "ns/a")
		time.Sleep(599 * time.Second)
		expectEvents(t, w)
		fresh := openWatch(t, cms, metav1.ListOptions{ResourceVersion: "0"})
		expectEvents(t, fresh, "ADDED ns/a@1")
		time.Sleep(time.Second)
		expectClosed(t, w)
	})
}

func TestDroppedWatchIsSilentFromTheStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cms := newServer(t, cachetest.Options{})
		create(t, cms, "ns/a")
		srv.DropNextWatches(1)
		lost := openWatch(t, cms, metav1.ListOptions{AllowWatchBookmarks: true})
		ok := openWatch(t, cms, metav1.ListOptions{})
		create(t, cms, "ns/b")
		time.Sleep(5 * time.Minute)
		expectEvents(t, lost)
		expectEvents(t, ok, "ADDED ns/a@1", "ADDED ns/b@2")
		lost.Stop()
		expectClosed(t, lost)
		if n := srv.Stats().Faults[cachetest.FaultDropWatch]; n != 1 {
			t.Fatalf("DropWatch = %d", n)
		}
	})
}

func TestEarlyRetriesAfterRetryAfterAreCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cms := newServer(t, cachetest.Options{})
		srv.FailNext(cachetest.VerbList, 1, cachetest.TooManyRequests(5*time.Second))
		if _, err := cms.List(metav1.ListOptions{}); !apierrors.IsTooManyRequests(err) {
			t.Fatal(err)
		}
		time.Sleep(4 * time.Second)
		_, _ = cms.List(metav1.ListOptions{})
		_, _ = cms.Watch(metav1.ListOptions{TimeoutSeconds: ptr.To[int64](1)}) // another verb: not a retry
		time.Sleep(time.Second)
		_, _ = cms.List(metav1.ListOptions{})
		if n := srv.Stats().EarlyRetries; n != 1 {
			t.Fatalf("EarlyRetries = %d, want 1", n)
		}
	})
}

func TestProgrammerErrorsPanic(t *testing.T) {
	srv, _ := newServer(t, cachetest.Options{})
	for name, f := range map[string]func(){
		"Error(nil)": func() { cachetest.Error(nil) },
		"zero Fault": func() { srv.FailNext(cachetest.VerbList, 1, cachetest.Fault{}) },
		"stream of refusals": func() {
			srv.FailNextWatchStreams(1, cachetest.ConnectionRefused())
		},
		"stream of a plain error": func() {
			srv.FailNextWatchStreams(1, cachetest.Error(errors.New("no status")))
		},
		"Namespace of CS": func() {
			srv.Resource(cachetest.Type{Resource: "nodes", Object: configMaps.Object, List: configMaps.List, ClusterScoped: true}).Namespace("x")
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

// CloseNextWatches: the next watch requests that would succeed get a watch
// that is closed at once with nothing in it, though the state (ADDED
// events) was there to deliver; refused requests (a FailNext failure, a
// 410) use none up; then watches work again.
func TestFaultCloseNextWatchesClosesThemEmptyAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cms := newServer(t, cachetest.Options{})
		create(t, cms, "ns/a", "ns/b")
		if err := srv.Compact("2"); err != nil {
			t.Fatal(err)
		}
		srv.CloseNextWatches(2, 0)
		srv.FailNext(cachetest.VerbWatch, 1, cachetest.Forbidden())
		if _, err := cms.Watch(metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Fatalf("the queued failure first: %v", err)
		}
		expectEvents(t, openWatch(t, cms, metav1.ListOptions{ResourceVersion: "1"}), "ERROR 410 Expired: too old resource version: 1 (2)")
		expectClosed(t, openWatch(t, cms, metav1.ListOptions{ResourceVersion: "0", AllowWatchBookmarks: true}))
		expectClosed(t, openWatch(t, cms, metav1.ListOptions{ResourceVersion: "0"}))
		ok := openWatch(t, cms, metav1.ListOptions{ResourceVersion: "0"})
		create(t, cms, "ns/c")
		expectEvents(t, ok, "ADDED ns/a@1", "ADDED ns/b@2", "ADDED ns/c@3")
		if n := srv.Stats().Faults[cachetest.FaultEmptyWatch]; n != 2 {
			t.Fatalf("Faults[EmptyWatch] = %d, want 2", n)
		}
	})
}

// CloseNextWatches with a delay: the watch stays open and silent that
// long (a change meanwhile is not delivered), or until its own timeout if
// that is sooner, and then closes cleanly.
func TestFaultCloseNextWatchesAfterADelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cms := newServer(t, cachetest.Options{})
		srv.CloseNextWatches(2, 3*time.Second)
		late := openWatch(t, cms, metav1.ListOptions{AllowWatchBookmarks: true})
		soon := openWatch(t, cms, metav1.ListOptions{TimeoutSeconds: ptr.To[int64](1)})
		create(t, cms, "ns/a")
		time.Sleep(time.Second)
		expectClosed(t, soon)
		time.Sleep(time.Second)
		if got, open := drain(late); !open || len(got) > 0 {
			t.Fatalf("2 s in: open=%v, events %q; want open and silent", open, got)
		}
		time.Sleep(time.Second)
		expectClosed(t, late)
		if n := srv.Stats().Faults[cachetest.FaultEmptyWatch]; n != 2 {
			t.Fatalf("Faults[EmptyWatch] = %d, want 2", n)
		}
	})
}

// FailNextWatchStreams: the watch is accepted, then ends with one ERROR
// event carrying the fault's status and nothing before it; a 429's
// Retry-After is kept as for a refused call. Drops, empty closes and
// failing streams are used up in the order queued.
func TestFaultFailNextWatchStreamsEndThemWithAnErrorEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cms := newServer(t, cachetest.Options{})
		create(t, cms, "ns/a")
		srv.FailNextWatchStreams(1, cachetest.InternalError())
		srv.CloseNextWatches(1, 0)
		srv.DropNextWatches(1)
		srv.FailNextWatchStreams(1, cachetest.TooManyRequests(2*time.Second))
		from0 := metav1.ListOptions{ResourceVersion: "0"}
		expectEvents(t, openWatch(t, cms, from0), "ERROR 500 InternalError: Internal error occurred: cachetest: injected internal error")
		expectClosed(t, openWatch(t, cms, from0))
		dropped := openWatch(t, cms, from0)
		expectEvents(t, dropped)
		dropped.Stop()
		expectClosed(t, dropped)
		expectEvents(t, openWatch(t, cms, from0), "ERROR 429 TooManyRequests: Too many requests, please try again later.")
		st := srv.Stats()
		if st.Faults[cachetest.FaultInternalError] != 1 || st.Faults[cachetest.FaultTooManyRequests] != 1 ||
			st.Faults[cachetest.FaultEmptyWatch] != 1 || st.Faults[cachetest.FaultDropWatch] != 1 {
			t.Fatalf("faults %v", st.Faults)
		}
		expectEvents(t, openWatch(t, cms, from0), "ADDED ns/a@1")
		time.Sleep(2 * time.Second)
		expectEvents(t, openWatch(t, cms, from0), "ADDED ns/a@1")
		if n := srv.Stats().EarlyRetries; n != 1 {
			t.Fatalf("EarlyRetries = %d, want 1: the watch within the streamed 429's Retry-After", n)
		}
	})
}

// ClearFaults cancels what CloseNextWatches and FailNextWatchStreams
// queued.
func TestClearFaultsCancelsQueuedWatchFaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cms := newServer(t, cachetest.Options{})
		create(t, cms, "ns/a")
		srv.CloseNextWatches(3, time.Second)
		srv.FailNextWatchStreams(3, cachetest.Timeout())
		srv.ClearFaults()
		expectEvents(t, openWatch(t, cms, metav1.ListOptions{ResourceVersion: "0"}), "ADDED ns/a@1")
		if n := len(srv.Stats().Faults); n != 0 {
			t.Fatalf("faults %v after ClearFaults", srv.Stats().Faults)
		}
	})
}

// A watch cut off by LoseWatches is silent, as behind a black-hole, until
// the transport would notice; then it ends with the ERROR event client-go's
// decoder delivers for a connection its HTTP/2 health check gave up on.
func TestLostWatchesEndWithTheTransportsError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cms := newServer(t, cachetest.Options{})
		w := openWatch(t, cms, metav1.ListOptions{AllowWatchBookmarks: true, TimeoutSeconds: ptr.To[int64](600)})
		if n := srv.LoseWatches(45 * time.Second); n != 1 {
			t.Fatalf("lost %d", n)
		}
		create(t, cms, "ns/a")
		time.Sleep(45*time.Second - time.Nanosecond)
		expectEvents(t, w)
		time.Sleep(time.Nanosecond)
		got, open := drain(w)
		want := "ERROR 500 InternalError: an error on the server (\"unable to decode an event from the watch stream: http2: client connection lost\") has prevented the request from succeeding"
		if open || len(got) != 1 || got[0] != want {
			t.Fatalf("open=%v events %q, want the transport's error, then closed", open, got)
		}
		if n := srv.Stats().Faults[cachetest.FaultLoseWatch]; n != 1 {
			t.Fatalf("LoseWatch = %d", n)
		}
	})
}
