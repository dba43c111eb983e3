package cache

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/kreflector/cache/cachetest"
)

// transformingStore strips data from ConfigMaps, as a RealFIFO with a
// transform would.
type transformingStore struct{ *cachetest.RecordingStore }

func (s *transformingStore) Transformer() TransformFunc {
	return func(o interface{}) (interface{}, error) {
		c := o.(*corev1.ConfigMap).DeepCopy()
		c.Name += "-t"
		return c, nil
	}
}

func TestWatchListAppliesStoreTransform(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := newScript(nil, []watchReply{{events: []watch.Event{ev(watch.Added, cm("a", "1")), bookmark("2", true)}, hang: true}})
		store := &transformingStore{cachetest.NewRecordingStore(nil)}
		r := NewReflector(lw, &corev1.ConfigMap{}, store, 0)
		runUntilDrained(t, r, lw)
		if got := store.CallStrings(); len(got) != 1 || got[0] != "Replace rv=2 [ns/a-t@1]" {
			t.Fatalf("store calls %q", got)
		}
	})
}

func TestInitialEventsHandlesUpdatesAndDeletes(t *testing.T) {
	e := newInitialEvents(cachetest.NewRecordingStore(nil), nil, false)
	for _, name := range []string{"a", "b", "c"} {
		if err := e.Add(cm(name, "1")); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Update(cm("b", "2")); err != nil {
		t.Fatal(err)
	}
	if err := e.Delete(cm("a", "3")); err != nil {
		t.Fatal(err)
	}
	if err := e.Add(cm("d", "4")); err != nil {
		t.Fatal(err)
	}
	if err := e.Update(cm("e", "5")); err != nil {
		t.Fatal(err)
	}
	if err := e.Delete(DeletedFinalStateUnknown{Key: "ns/c"}); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(keysOf(e.take()), " ")
	if got != "ns/b@2 ns/d@4 ns/e@5" {
		t.Fatalf("gathered %s", got)
	}
	if err := e.Update(42); err == nil {
		t.Fatal("an object without metadata must be an error")
	}
}

func TestWatchListErrorEventFallsBackOrRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		forbidden := apierrors.NewForbidden(cmGVR, "", errors.New("rbac")).Status()
		lw := newScript([]listReply{{list: cmList("9", "", cm("a", "1"))}}, []watchReply{{events: []watch.Event{errEvent(&forbidden)}}})
		store := cachetest.NewRecordingStore(nil)
		r := NewReflector(lw, &corev1.ConfigMap{}, store, 0)
		runUntilDrained(t, r, lw)
		calls := lw.recorded()
		if len(calls) != 3 || !strings.HasPrefix(calls[1], "LIST") {
			t.Fatalf("a refused WatchList must fall back to LIST: %q", calls)
		}
	})
}

func TestDefaultWatchErrorHandlerLevels(t *testing.T) {
	var buf bytes.Buffer
	logger := funcr.New(func(prefix, args string) { buf.WriteString(prefix + args + "\n") }, funcr.Options{Verbosity: 1})
	ctx := klog.NewContext(context.Background(), logger)
	r := NewNamedReflector("h", newScript(nil, nil), nil, cachetest.NewRecordingStore(nil), 0)
	for _, tc := range []struct {
		err  error
		want string
	}{
		{apierrors.NewResourceExpired("old"), ""},
		{errors.Join(errors.New("read"), errUnexpectedEOF()), "unexpected EOF"},
		{errEOF(), ""},
		{errors.New("boom"), `"error"="boom"`},
	} {
		buf.Reset()
		DefaultWatchErrorHandler(ctx, r, tc.err)
		if tc.want == "" && buf.Len() != 0 || !strings.Contains(buf.String(), tc.want) {
			t.Errorf("%v: logged %q, want %q", tc.err, buf.String(), tc.want)
		}
	}
}

// A server that keeps closing the WatchList before its initial-events-end
// bookmark gets a backoff delay between attempts and, after
// maxIncompleteWatchLists of them, a LIST, counted as a fallback.
func TestIncompleteWatchListBacksOffThenLists(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var watches []watchReply
		for range maxIncompleteWatchLists {
			watches = append(watches, watchReply{events: []watch.Event{ev(watch.Added, cm("a", "5"))}})
		}
		lw := newScript([]listReply{{list: cmList("10", "", cm("a", "5"))}}, watches)
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), ReflectorOptions{})
		_, stop := startReflector(t, r)
		<-lw.drained
		synctest.Wait()
		h := r.Health()
		stop()
		want := []string{"WATCH", "WATCH", "WATCH", "LIST", "WATCH"}
		if !slices.Equal(lw.verbs(), want) {
			t.Fatalf("calls %q, want %q", lw.verbs(), want)
		}
		for i := 1; i < maxIncompleteWatchLists; i++ {
			if gap := lw.times[i].Sub(lw.times[i-1]); gap < defaultBackoffInit {
				t.Errorf("WatchList %d came %v after the previous one; want a backoff delay", i+1, gap)
			}
		}
		s := r.Stats()
		if s.WatchLists[ListInitial] != 1 || s.WatchLists[ListRetry] != maxIncompleteWatchLists-1 || s.Lists[ListWatchListFallback] != 1 {
			t.Errorf("stats: WatchLists %v Lists %v", s.WatchLists, s.Lists)
		}
		if h.State != Synced {
			t.Errorf("health %+v", h)
		}
	})
}
