package cache

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache/cachetest"
)

// relistTestReflector is a Reflector on lw (no WatchList) whose backoff is
// one second flat, and the count of its WatchErrorHandler's calls.
func relistTestReflector(lw *scriptLW) (*Reflector, *int) {
	handled := new(int)
	r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), ReflectorOptions{
		UseWatchList:      ptr.To(false),
		Backoff:           &wait.Backoff{Duration: time.Second, Factor: 1, Steps: 100},
		WatchErrorHandler: func(context.Context, *Reflector, error) { *handled++ },
	})
	return r, handled
}

var errApply = fmt.Errorf("%w: index \"x\" failed on ns/a: %w", ErrIndexerFailed, errors.New("boom"))

// checkStoreFailing fails t unless r is Degraded with StoreFailing and
// errApply as its cause.
func checkStoreFailing(t *testing.T, r *Reflector) {
	t.Helper()
	if h := r.Health(); h.State != Degraded || h.Reason != ReasonStoreFailing || !errors.Is(h.LastError, errApply) {
		t.Fatalf("health %v; want Degraded StoreFailing with the failure", h)
	}
}

// A request to relist ends the cycle wherever it is, a LIST in flight
// included (no WatchErrorHandler call: the cut is no failure of the
// call): Health is Degraded (StoreFailing) at once, the failure counted,
// and the Reflector relists after a backoff delay.
func TestRelistRequestEndsAListInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := newScript([]listReply{{list: cmList("1", ""), delay: time.Minute}, {list: cmList("2", "")}}, nil)
		r, handled := relistTestReflector(lw)
		startReflector(t, r)
		time.Sleep(time.Second)
		r.relistFor(errApply)
		synctest.Wait()
		checkStoreFailing(t, r)
		time.Sleep(time.Second + time.Millisecond)
		synctest.Wait()
		if got := lw.arrivals("LIST", time.Now().Add(-2*time.Second-time.Millisecond)); len(got) != 2 || got[1] != 2*time.Second {
			t.Fatalf("LISTs at %v; want the second a backoff delay after the request", got)
		}
		st := r.Stats()
		if st.IndexerFailures != 1 || st.Lists[ListStoreRefused] != 1 || *handled != 0 {
			t.Errorf("IndexerFailures %d, Lists %v, WatchErrorHandler calls %d", st.IndexerFailures, st.Lists, *handled)
		}
		if !r.HasSynced() {
			t.Error("the relist did not sync")
		}
	})
}

// A request made between cycles (during the backoff after a failed LIST)
// ends the next cycle as it begins: Health says so then, not when that
// cycle would have ended, and the relist follows a backoff delay later.
func TestRelistRequestBetweenCyclesEndsTheNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		internal := apierrors.NewInternalError(errors.New("etcd"))
		lw := newScript([]listReply{{err: internal}, {list: cmList("2", "")}}, nil)
		r, _ := relistTestReflector(lw)
		startReflector(t, r)
		time.Sleep(500 * time.Millisecond)
		r.relistFor(errApply)
		time.Sleep(600 * time.Millisecond) // the next cycle has begun
		synctest.Wait()
		checkStoreFailing(t, r)
		if n := countCalls(lw, "LIST"); n != 1 {
			t.Fatalf("%d LISTs; want none by the cycle the request ended", n)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if n := countCalls(lw, "LIST"); n != 2 || !r.HasSynced() {
			t.Fatalf("%d LISTs, synced %v; want the relist a backoff delay later", n, r.HasSynced())
		}
	})
}

// The owner of the requests: one ends the cycle in progress, or the next
// as it begins; the cycle takes it unless its parent context ended (Run
// stopped, or the shard changed), when it waits for the next cycle.
func TestRelistRequests(t *testing.T) {
	var q relistRequests
	parent, stop := context.WithCancel(context.Background())
	cctx := q.begin(parent)
	q.request(errApply)
	if cctx.Err() == nil {
		t.Fatal("a request did not end the cycle in progress")
	}
	if err := q.end(parent); err != errApply {
		t.Fatalf("end = %v, want the request", err)
	}
	if cctx = q.begin(parent); cctx.Err() != nil {
		t.Fatal("a request carried out ended the next cycle too")
	}
	q.end(parent)
	q.request(errApply)
	if cctx = q.begin(parent); cctx.Err() == nil {
		t.Fatal("a request made between cycles did not end the next as it began")
	}
	stop()
	if err := q.end(parent); err != nil {
		t.Fatalf("end with the parent ended = %v, want nothing taken", err)
	}
	if q.begin(context.Background()).Err() == nil || q.end(context.Background()) != errApply {
		t.Fatal("the request was not kept for the next cycle")
	}
}

// A cycle cut short by a request returns no error of its own, even if
// the call in flight returned the cancellation and the cycle took that
// for a failure (it can: the call's answer and the context's end race in
// the cycle's wait): the WatchErrorHandler hears nothing of it.
func TestCycleCutByARequestReturnsNoError(t *testing.T) {
	r, _ := relistTestReflector(newScript(nil, nil))
	ctx := t.Context()
	c := newCycle(ctx, r)
	r.relists.begin(ctx)
	c.err = fmt.Errorf("failed to list *v1.ConfigMap: %w", context.Canceled)
	r.relists.request(errApply)
	c.relistIfAsked(ctx, true)
	if c.err != nil {
		t.Errorf("the cut cycle returns %v", c.err)
	}
	checkStoreFailing(t, r)
}
