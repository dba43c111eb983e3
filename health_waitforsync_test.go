package cache

import (
	"context"
	"errors"
	"fmt"
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

// WaitForSync: the cause of not being synced, or none.

func TestWaitForSyncReturnsTheCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		forbidden := apierrors.NewForbidden(cmGVR, "", errors.New("no list rights"))
		lw := newScript([]listReply{{err: forbidden}, {err: forbidden}}, nil)
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), ReflectorOptions{UseWatchList: ptr.To(false)})
		ctx, _ := startReflector(t, r)
		wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
		defer wcancel()
		err := r.WaitForSync(wctx)
		if !apierrors.IsForbidden(err) || !errors.Is(err, ErrNotSynced) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("WaitForSync = %v; want Forbidden, ErrNotSynced and the deadline", err)
		}
		h := r.Health()
		if h.State != Degraded || h.Reason != ReasonForbidden || h.HasSynced {
			t.Fatalf("health %+v", h)
		}
	})
}

func TestWaitForSyncWithoutError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := NewReflector(newScript(nil, nil), nil, cachetest.NewRecordingStore(nil), 0)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if err := r.WaitForSync(ctx); !errors.Is(err, ErrNotSynced) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v", err)
		}
		if s := HealthState(7).String(); s != "HealthState(7)" {
			t.Fatalf("unknown state string %q", s)
		}
	})
}

// WaitForSync names the cause from the first failure on, not only once
// the grace period has made the Reflector Degraded: a LIST failing with a
// 500, or answering with an object that is not a list, is in the error
// (and in Health.LastError) 3 s in, while health still says Syncing.
func TestWaitForSyncNamesTheFirstFailure(t *testing.T) {
	internal := apierrors.NewInternalError(errors.New("etcd down"))
	cases := map[string]struct {
		reply listReply
		is    func(error) bool
	}{
		"500":        {listReply{err: internal}, apierrors.IsInternalError},
		"not a list": {listReply{list: cm("a", "1")}, func(err error) bool { return strings.Contains(err.Error(), "must be a list") }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lw := newScript([]listReply{tc.reply, tc.reply, tc.reply}, nil)
				r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), ReflectorOptions{UseWatchList: ptr.To(false)})
				ctx, _ := startReflector(t, r)
				wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
				defer cancel()
				err := r.WaitForSync(wctx)
				if !errors.Is(err, ErrNotSynced) || !errors.Is(err, context.DeadlineExceeded) || !tc.is(err) || !strings.Contains(err.Error(), "last error: ") {
					t.Fatalf("WaitForSync = %v; want ErrNotSynced, the deadline and the LIST's error", err)
				}
				if h := r.Health(); h.State != Syncing || h.LastError == nil || !tc.is(h.LastError) {
					t.Fatalf("health %+v; want Syncing (the grace period runs) with the LIST's error", h)
				}
			})
		})
	}
}

// The informer's WaitForSync names the first failure too.
func TestInformerWaitForSyncNamesTheFirstFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		internal := apierrors.NewInternalError(errors.New("etcd down"))
		lw := newScript([]listReply{{err: internal}, {err: internal}}, nil)
		lw.noWL = true
		inf := NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, Indexers{})
		runInformer(t, inf)
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		err := inf.(InformerHealthReporter).WaitForSync(ctx)
		if !errors.Is(err, ErrNotSynced) || !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "last error: ") {
			t.Fatalf("WaitForSync = %v; want ErrNotSynced wrapping the LIST's 500", err)
		}
	})
}

// While a WatchList streams the initial state without its end bookmark,
// WaitForSync says that it waits for the bookmark, with the objects so far.
func TestWaitForSyncSaysItWaitsForTheWatchListBookmark(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := newScript(nil, []watchReply{{events: []watch.Event{ev(watch.Added, cm("a", "1")), ev(watch.Added, cm("b", "2"))}, hang: true}})
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), ReflectorOptions{})
		inf := NewSharedIndexInformer(newScript(nil, []watchReply{{events: []watch.Event{ev(watch.Added, cm("a", "1"))}, hang: true}}), &corev1.ConfigMap{}, 0, Indexers{})
		ctx, _ := startReflector(t, r)
		runInformer(t, inf)
		wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		const want = "waiting for the WatchList's initial-events-end bookmark (%d objects so far; a fake clientset never sends it unless its ListWatch is wrapped with client-go's cache.ToListWatcherWithWatchListSemantics)"
		if err := r.WaitForSync(wctx); !errors.Is(err, ErrNotSynced) || !strings.Contains(err.Error(), fmt.Sprintf(want, 2)) {
			t.Fatalf("WaitForSync = %v; want it to say it waits for the bookmark, 2 objects in", err)
		}
		if err := inf.(InformerHealthReporter).WaitForSync(wctx); !errors.Is(err, ErrNotSynced) || !strings.Contains(err.Error(), fmt.Sprintf(want, 1)) {
			t.Fatalf("informer's WaitForSync = %v; want it to say it waits for the bookmark, 1 object in", err)
		}
	})
}

// A Reflector whose Run has returned says so: Health is Stopped, with
// what it had learned (HasSynced, the last error), OnHealthChange hears
// of it, and WaitForSync returns at once, a wait already in progress
// included, with ErrStopped and the cause instead of waiting for its
// context. Run again, it is Syncing until it syncs.
func TestReflectorStoppedSaysSo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		forbidden := apierrors.NewForbidden(cmGVR, "", errors.New("no list rights"))
		lw := newScript([]listReply{{err: forbidden}, {list: cmList("1", "", cm("a", "1")), delay: time.Second}}, nil)
		log := &healthLog{start: time.Now()}
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), ReflectorOptions{UseWatchList: ptr.To(false), OnHealthChange: log.record})
		_, stop := startReflector(t, r)
		waited := make(chan error, 1)
		go func() { waited <- r.WaitForSync(context.Background()) }()
		synctest.Wait()
		stop()
		synctest.Wait()
		h := r.Health()
		if h.State != Stopped || h.Reason != ReasonNone || h.HasSynced || !apierrors.IsForbidden(h.LastError) {
			t.Fatalf("health after Run returned: %+v; want Stopped, unsynced, with the Forbidden error", h)
		}
		if log.last.State != Stopped {
			t.Errorf("OnHealthChange last heard %+v, want Stopped", log.last)
		}
		for i, err := range []error{<-waited, r.WaitForSync(context.Background())} {
			if !errors.Is(err, ErrStopped) || !errors.Is(err, ErrNotSynced) || !apierrors.IsForbidden(err) {
				t.Errorf("WaitForSync %d = %v; want ErrStopped, ErrNotSynced and the Forbidden error", i, err)
			}
		}
		_, stop = startReflector(t, r)
		synctest.Wait()
		if h := r.Health(); h.State != Syncing {
			t.Fatalf("health of a Reflector run again, listing: %+v; want Syncing", h)
		}
		if err := r.WaitForSync(t.Context()); err != nil {
			t.Fatalf("WaitForSync of a Reflector run again: %v", err)
		}
		stop()
		if h := r.Health(); h.State != Stopped || !h.HasSynced {
			t.Fatalf("health after a synced run returned: %+v", h)
		}
		if err := r.WaitForSync(context.Background()); err != nil {
			t.Fatalf("WaitForSync of a stopped Reflector that synced = %v", err)
		}
	})
}
