package cache

import (
	"context"
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache/cachetest"
)

// scenario is one script both Reflectors run.
type scenario struct {
	name    string
	lists   []listReply
	watches []watchReply
	// noWatchList makes the ListerWatcher refuse WatchList semantics.
	noWatchList bool
	// runFor keeps the Reflector running this long after the script ran dry.
	runFor       time.Duration
	resync       time.Duration
	internalWin  time.Duration
	pageSize     int64
	expectedType interface{}
	// ourOptions adjusts our Reflector's options (to turn off a feature
	// beyond client-go that the scenario would otherwise exercise).
	ourOptions func(*ReflectorOptions)
}

// reflectorUnderTest starts a Reflector on lw and store until ctx ends.
type reflectorUnderTest func(ctx context.Context, sc scenario, lw ListerWatcher, store *cachetest.RecordingStore)

func runOurs(ctx context.Context, sc scenario, lw ListerWatcher, store *cachetest.RecordingStore) {
	opts := ReflectorOptions{Name: "under-test", ResyncPeriod: sc.resync}
	if sc.ourOptions != nil {
		sc.ourOptions(&opts)
	}
	r := NewReflectorWithOptions(lw, sc.expectedType, store, opts)
	r.MaxInternalErrorRetryDuration = sc.internalWin
	r.WatchListPageSize = sc.pageSize
	r.RunWithContext(ctx)
}

func runClientGo(ctx context.Context, sc scenario, lw ListerWatcher, store *cachetest.RecordingStore) {
	r := clientgocache.NewReflectorWithOptions(lw, sc.expectedType, store, clientgocache.ReflectorOptions{Name: "under-test", ResyncPeriod: sc.resync})
	r.MaxInternalErrorRetryDuration = sc.internalWin
	r.WatchListPageSize = sc.pageSize
	r.RunWithContext(ctx)
}

// play runs sc against one Reflector in a synctest bubble and returns the
// ListerWatcher calls and store calls it made.
func play(t *testing.T, sc scenario, run reflectorUnderTest) (calls, stored []string) {
	synctest.Test(t, func(t *testing.T) {
		lw := newScript(slices.Clone(sc.lists), slices.Clone(sc.watches))
		lw.noWL = sc.noWatchList
		store := cachetest.NewRecordingStore(nil)
		_, stop := startRun(t, func(ctx context.Context) { run(ctx, sc, lw, store) })
		select {
		case <-lw.drained:
		case <-time.After(time.Hour):
			t.Errorf("script not drained within an hour of fake time: %q", lw.recorded())
		}
		time.Sleep(sc.runFor)
		synctest.Wait()
		stop()
		lw.inflight.Wait()
		calls, stored = lw.recorded(), store.CallStrings()
	})
	return calls, stored
}

func tooManyRequests() error { return apierrors.NewTooManyRequests("slow down", 1) }

func connectionRefused() error {
	return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
}

func tooLargeRV() error {
	err := apierrors.NewTimeoutError("Too large resource version", 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	return err
}

func expiredStatus() *metav1.Status {
	s := apierrors.NewResourceExpired("too old resource version").Status()
	return &s
}

func internalStatus() *metav1.Status {
	s := apierrors.NewInternalError(errors.New("etcd hiccup")).Status()
	return &s
}

var cmGVR = schema.GroupResource{Resource: "configmaps"}

// scenarios covers the behaviour that must match client-go call for call.
func scenarios() []scenario {
	live := []watch.Event{ev(watch.Added, cm("b", "11")), ev(watch.Modified, cm("a", "12")), bookmark("13", false), ev(watch.Deleted, cm("b", "14"))}
	base := listReply{list: cmList("10", "", cm("a", "5"))}
	return []scenario{
		{name: "list then watch, resume after a normal close", noWatchList: true,
			lists:   []listReply{base},
			watches: []watchReply{{events: live, closeAfter: 2 * time.Second}, {events: []watch.Event{ev(watch.Added, cm("c", "15"))}, closeAfter: 3 * time.Second}}},
		{name: "paged first list keeps paging on relist", noWatchList: true,
			lists: []listReply{
				{list: cmList("10", "tok1", cm("a", "5"))}, {list: cmList("10", "", cm("b", "6"))},
				{list: cmList("20", "tok2", cm("a", "5"))}, {list: cmList("20", "", cm("c", "16"))}},
			watches: []watchReply{{events: []watch.Event{ev(watch.Modified, cm("a", "15")), errEvent(expiredStatus())}}}},
		{name: "unpaged relist at a specific RV", noWatchList: true,
			lists:   []listReply{base, {list: cmList("30", "", cm("a", "25"))}},
			watches: []watchReply{{events: []watch.Event{ev(watch.Modified, cm("a", "20")), errEvent(expiredStatus())}}}},
		{name: "user page size applies to relists", noWatchList: true, pageSize: 2,
			lists:   []listReply{base, {list: cmList("30", "", cm("a", "25"))}},
			watches: []watchReply{{events: []watch.Event{ev(watch.Modified, cm("a", "20")), errEvent(expiredStatus())}}}},
		{name: "expired continue token falls back to a full list", noWatchList: true,
			lists: []listReply{{list: cmList("10", "tok1", cm("a", "5"))}, {err: apierrors.NewResourceExpired("continue expired")},
				{list: cmList("12", "", cm("a", "5"), cm("b", "11"))}}},
		{name: "failed later page restarts the list with page retries off", noWatchList: true,
			ourOptions: func(o *ReflectorOptions) { o.ListPageRetries = -1 },
			lists: []listReply{{list: cmList("10", "tok1", cm("a", "5"))}, {err: apierrors.NewInternalError(errors.New("etcd"))},
				{list: cmList("12", "", cm("a", "5"), cm("b", "11"))}}},
		{name: "expired list RV retries at RV empty", noWatchList: true,
			lists:   []listReply{base, {err: apierrors.NewResourceExpired("gone")}, {list: cmList("40", "", cm("z", "39"))}},
			watches: []watchReply{{events: []watch.Event{errEvent(expiredStatus())}, closeAfter: 2 * time.Second}}},
		{name: "too large RV on list retries at RV empty", noWatchList: true,
			lists: []listReply{{err: tooLargeRV()}, {list: cmList("40", "", cm("z", "39"))}}},
		{name: "429 and refused watch back off without relist", noWatchList: true,
			lists:   []listReply{base},
			watches: []watchReply{{err: tooManyRequests()}, {err: connectionRefused()}, {events: live[:1], closeAfter: 5 * time.Second}}},
		{name: "watch open failure ends the cycle", noWatchList: true,
			lists:   []listReply{base, {list: cmList("30", "", cm("a", "25"))}},
			watches: []watchReply{{err: apierrors.NewForbidden(cmGVR, "", errors.New("no"))}}},
		{name: "internal errors retried within the window", noWatchList: true, internalWin: time.Minute,
			lists:   []listReply{base},
			watches: []watchReply{{events: []watch.Event{ev(watch.Added, cm("b", "11")), errEvent(internalStatus())}}, {events: []watch.Event{errEvent(internalStatus())}}}},
		{name: "internal errors without a window relist", noWatchList: true,
			lists:   []listReply{base, {list: cmList("30", "", cm("a", "25"))}},
			watches: []watchReply{{events: []watch.Event{errEvent(internalStatus())}}}},
		{name: "429 event backs off and re-watches", noWatchList: true,
			lists:   []listReply{base},
			watches: []watchReply{{events: []watch.Event{ev(watch.Added, cm("b", "11")), errEvent(&apierrors.NewTooManyRequests("x", 1).ErrStatus)}}}},
		{name: "very short watch relists", noWatchList: true,
			lists:   []listReply{base, {list: cmList("30", "", cm("a", "25"))}},
			watches: []watchReply{{}}},
		{name: "wrong type dropped", noWatchList: true, expectedType: &corev1.ConfigMap{},
			lists:   []listReply{base},
			watches: []watchReply{{events: []watch.Event{ev(watch.Added, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ResourceVersion: "11"}}), ev(watch.Added, cm("b", "12"))}, closeAfter: 2 * time.Second}}},
		{name: "synthetic adds hold back RV", noWatchList: true,
			lists:   []listReply{{list: cmList("", "", cm("a", "5"))}},
			watches: []watchReply{{events: []watch.Event{ev(watch.Added, cm("a", "5")), ev(watch.Added, cm("b", "7")), ev(watch.Modified, cm("a", "9")), ev(watch.Added, cm("c", "10"))}, closeAfter: 2 * time.Second}}},
		{name: "resync while watching", noWatchList: true, resync: time.Minute, runFor: 150 * time.Second,
			lists: []listReply{base}},
		{name: "watchlist streams then keeps the watch",
			watches: []watchReply{{events: []watch.Event{ev(watch.Added, cm("a", "5")), ev(watch.Added, cm("b", "7")), bookmark("10", true), ev(watch.Modified, cm("a", "11")), bookmark("12", false)}, closeAfter: 2 * time.Second}}},
		{name: "watchlist refused falls back to list",
			lists:   []listReply{base},
			watches: []watchReply{{err: apierrors.NewBadRequest("sendInitialEvents unsupported")}, {events: live[:2], closeAfter: 2 * time.Second}}},
		{name: "watchlist throttled then expired",
			watches: []watchReply{{err: tooManyRequests()}, {events: []watch.Event{errEvent(expiredStatus())}},
				{events: []watch.Event{ev(watch.Added, cm("a", "5")), bookmark("10", true)}, closeAfter: 2 * time.Second}}},
		{name: "watchlist closed before its bookmark tries again",
			watches: []watchReply{{events: []watch.Event{ev(watch.Added, cm("a", "5"))}, closeAfter: 2 * time.Second},
				{events: []watch.Event{ev(watch.Added, cm("a", "6")), bookmark("10", true)}, hang: true}}},
		{name: "watchlist very short falls back to list",
			lists:   []listReply{base},
			watches: []watchReply{{}}},
	}
}

// TestDifferentialWithClientGo runs every scenario through client-go's
// Reflector and ours and requires identical ListerWatcher calls (options
// included) and identical store calls in the same order.
func TestDifferentialWithClientGo(t *testing.T) {
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			wantCalls, wantStore := play(t, sc, runClientGo)
			gotCalls, gotStore := play(t, sc, runOurs)
			t.Logf("calls:\n  %s\nstore:\n  %s", strings.Join(gotCalls, "\n  "), strings.Join(gotStore, "\n  "))
			if !slices.Equal(gotCalls, wantCalls) {
				t.Errorf("ListerWatcher calls differ\nclient-go:\n  %s\nours:\n  %s", strings.Join(wantCalls, "\n  "), strings.Join(gotCalls, "\n  "))
			}
			if !slices.Equal(gotStore, wantStore) {
				t.Errorf("store calls differ\nclient-go:\n  %s\nours:\n  %s", strings.Join(wantStore, "\n  "), strings.Join(gotStore, "\n  "))
			}
			if len(wantCalls) == 0 || len(wantStore) == 0 {
				t.Errorf("scenario made no calls: %v / %v", wantCalls, wantStore)
			}
		})
	}
}
