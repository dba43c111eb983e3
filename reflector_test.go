package cache

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache/cachetest"
)

var noWatchList = ReflectorOptions{UseWatchList: ptr.To(false)}

func TestRunReturnsWhileListIgnoresContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		lw := newScript([]listReply{{list: cmList("1", ""), block: release}}, nil)
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), noWatchList)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { r.RunWithContext(ctx); close(done) }()
		synctest.Wait()
		cancel()
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("RunWithContext did not return while LIST was blocked")
		}
		close(release) // the waiting goroutine must now exit, or synctest fails
	})
}

func TestRunReturnsWhileWatchOpenIgnoresContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		w := watch.NewFake()
		lw := newScript([]listReply{{list: cmList("1", "")}}, []watchReply{{block: release, w: w}})
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), noWatchList)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { r.RunWithContext(ctx); close(done) }()
		synctest.Wait()
		cancel()
		<-done
		close(release)
		synctest.Wait()
		if !w.IsStopped() {
			t.Fatal("the watch returned after Run ended must be stopped")
		}
	})
}

func TestListAndWatchReturnsWhenContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := newScript([]listReply{{list: cmList("1", "")}}, nil)
		lw.noWL = true
		r := NewReflector(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), 0)
		stop := make(chan struct{})
		errc := make(chan error, 1)
		go func() { errc <- r.ListAndWatch(stop) }()
		<-lw.drained
		close(stop)
		if err := <-errc; err != nil {
			t.Fatalf("ListAndWatch after stop: %v", err)
		}
		if r.LastSyncResourceVersion() != "1" {
			t.Fatalf("LastSyncResourceVersion = %q", r.LastSyncResourceVersion())
		}
	})
}

func TestRunStopsOnStopChannel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := newScript([]listReply{{list: cmList("1", "")}}, nil)
		r := NewReflector(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), 0)
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { r.Run(stop); close(done) }()
		<-lw.drained
		close(stop)
		<-done
	})
}

func TestConstructorPanicsOnNil(t *testing.T) {
	lw := newScript(nil, nil)
	var nilStore *cachetest.RecordingStore
	for name, f := range map[string]func(){
		"nil lw":          func() { NewReflector(nil, nil, cachetest.NewRecordingStore(nil), 0) },
		"nil store":       func() { NewReflector(lw, nil, nil, 0) },
		"typed nil store": func() { NewReflector(lw, nil, nilStore, 0) },
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

func TestNamesAndDescriptions(t *testing.T) {
	lw := newScript(nil, nil)
	r := NewReflector(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), 0)
	if !strings.HasPrefix(r.Name(), "main/reflector_test.go:") && !strings.Contains(r.Name(), "reflector_test.go:") {
		t.Errorf("default name %q should point at the caller", r.Name())
	}
	if r.TypeDescription() != "*v1.ConfigMap" {
		t.Errorf("typed description %q", r.TypeDescription())
	}
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apps/v1")
	u.SetKind("Deployment")
	if got := NewNamedReflector("n", lw, u, cachetest.NewRecordingStore(nil), 0); got.TypeDescription() != "apps/v1, Kind=Deployment" || got.Name() != "n" {
		t.Errorf("unstructured: name %q description %q", got.Name(), got.TypeDescription())
	}
	if got := NewReflector(lw, &unstructured.Unstructured{}, cachetest.NewRecordingStore(nil), 0).TypeDescription(); got != "*unstructured.Unstructured" {
		t.Errorf("unstructured without GVK: %q", got)
	}
	if got := NewReflector(lw, nil, cachetest.NewRecordingStore(nil), 0).TypeDescription(); got != defaultExpectedTypeName {
		t.Errorf("nil type: %q", got)
	}
}

func TestErrorsKeepTheirClass(t *testing.T) {
	storeErr := errors.New("disk full")
	failingReplace := cachetest.NewRecordingStore(nil)
	failingReplace.FailOn(cachetest.OpReplace, storeErr)
	cases := map[string]struct {
		lw    *scriptLW
		store *cachetest.RecordingStore
		check func(error) bool
	}{
		"replace": {newScript([]listReply{{list: cmList("1", "")}}, nil), failingReplace,
			func(err error) bool { return errors.Is(err, storeErr) }},
		"list forbidden":  {newScript([]listReply{{err: apierrors.NewForbidden(cmGVR, "", errors.New("rbac"))}}, nil), cachetest.NewRecordingStore(nil), apierrors.IsForbidden},
		"watch not found": {newScript([]listReply{{list: cmList("1", "")}}, []watchReply{{err: apierrors.NewNotFound(cmGVR, "")}}), cachetest.NewRecordingStore(nil), apierrors.IsNotFound},
	}
	for name, tc := range cases {
		synctest.Test(t, func(t *testing.T) {
			tc.lw.noWL = true
			r := NewReflector(tc.lw, &corev1.ConfigMap{}, tc.store, 0)
			err := r.ListAndWatchWithContext(t.Context())
			if err == nil || !tc.check(err) {
				t.Errorf("%s: got %v", name, err)
			}
		})
	}
}

func TestResyncErrorEndsTheWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := newScript([]listReply{{list: cmList("1", "")}}, []watchReply{{hang: true}})
		lw.noWL = true
		store := cachetest.NewRecordingStore(nil)
		store.FailOn(cachetest.OpResync, errors.New("queue closed"))
		r := NewReflector(lw, &corev1.ConfigMap{}, store, time.Minute)
		start := time.Now()
		if err := r.ListAndWatchWithContext(t.Context()); err != nil {
			t.Fatalf("a resync failure ends the cycle without an error, got %v", err)
		}
		if time.Since(start) != time.Minute {
			t.Fatalf("cycle ended after %v, want at the first resync", time.Since(start))
		}
		if got := store.CallStrings(); len(got) != 2 || got[1] != "Resync" {
			t.Fatalf("store calls %q", got)
		}
	})
}

func TestShouldResyncGatesResync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := newScript([]listReply{{list: cmList("1", "")}}, nil)
		store := cachetest.NewRecordingStore(nil)
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, ReflectorOptions{ResyncPeriod: time.Minute, UseWatchList: ptr.To(false)})
		var asked int
		r.ShouldResync = func() bool { asked++; return asked%2 == 0 }
		runFor(t, r, 4*time.Minute+time.Second)
		if got := store.CallStrings(); asked != 4 || len(got) != 3 {
			t.Fatalf("asked %d times, store calls %q; want 4 questions and 2 resyncs", asked, got)
		}
	})
}

func TestCustomBackoffSpacesCycles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		lw := newScript(slices.Repeat([]listReply{{err: apierrors.NewServiceUnavailable("down")}}, 10), nil)
		opts := noWatchList
		opts.Backoff = &wait.Backoff{Duration: 10 * time.Second, Factor: 2, Steps: 10, Cap: 30 * time.Second}
		opts.WatchErrorHandler = func(context.Context, *Reflector, error) {}
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), opts)
		runFor(t, r, 75*time.Second)
		at := lw.arrivals("LIST", start)
		want := []time.Duration{0, 10 * time.Second, 30 * time.Second, 60 * time.Second}
		if len(at) != len(want) {
			t.Fatalf("LIST at %v, want %v", at, want)
		}
		for i := range want {
			if at[i] != want[i] {
				t.Fatalf("LIST at %v, want %v", at, want)
			}
		}
	})
}

func TestWatchTimeoutFromMinAndRand(t *testing.T) {
	lw := newScript(nil, nil)
	r := NewReflectorWithOptions(lw, nil, cachetest.NewRecordingStore(nil), ReflectorOptions{MinWatchTimeout: 10 * time.Minute, Rand: rand.New(rand.NewPCG(1, 2))})
	for range 100 {
		if s := *r.watchTimeout(); s < 600 || s >= 1200 {
			t.Fatalf("timeout %ds outside [600, 1200)", s)
		}
	}
	r = NewReflectorWithOptions(lw, nil, cachetest.NewRecordingStore(nil), ReflectorOptions{MinWatchTimeout: time.Second})
	if s := *r.watchTimeout(); s < 300 || s >= 600 {
		t.Fatalf("a minimum below five minutes must be raised to it; timeout %ds", s)
	}
}

func TestWatchErrorHandlerSeesCycleErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := newScript([]listReply{{err: apierrors.NewForbidden(cmGVR, "", errors.New("rbac"))}}, nil)
		var got []error
		opts := noWatchList
		opts.WatchErrorHandler = func(_ context.Context, r *Reflector, err error) { got = append(got, err) }
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), opts)
		runUntilDrained(t, r, lw)
		if len(got) != 1 || !apierrors.IsForbidden(got[0]) {
			t.Fatalf("handler got %v", got)
		}
	})
}
