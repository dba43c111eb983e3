package cachetest_test

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache/cachetest"
)

// watchList is the request client-go's Reflector makes for a WatchList.
func watchList(rv string) metav1.ListOptions {
	return metav1.ListOptions{
		ResourceVersion:      rv,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		SendInitialEvents:    ptr.To(true),
		AllowWatchBookmarks:  true,
	}
}

func TestWatchListSendsStateThenEndBookmarkThenChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cms := newServer(t, cachetest.Options{})
		create(t, cms, "ns/b", "ns/a")
		w := openWatch(t, cms, watchList(""))
		expectEvents(t, w, "ADDED ns/a@2", "ADDED ns/b@1", "BOOKMARK @2 end")
		update(t, cms, "ns/b")
		expectEvents(t, w, "MODIFIED ns/b@3")
		if srv.Stats().WatchLists != 1 {
			t.Fatalf("WatchLists = %d", srv.Stats().WatchLists)
		}
	})
}

func TestWatchListAtZeroMayBeStale(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, cms := newServer(t, cachetest.Options{CacheLag: 1})
		create(t, cms, "ns/a", "ns/b")
		w := openWatch(t, cms, watchList("0"))
		expectEvents(t, w, "ADDED ns/a@1", "BOOKMARK @1 end", "ADDED ns/b@2")
	})
}

func TestWatchListAtAResourceVersionIsNotOlderThanIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cms := newServer(t, cachetest.Options{HistoryLimit: 1})
		create(t, cms, "ns/a", "ns/b", "ns/c")
		w := openWatch(t, cms, watchList("1")) // compacted, but the newest state is not older than it
		expectEvents(t, w, "ADDED ns/a@1", "ADDED ns/b@2", "ADDED ns/c@3", "BOOKMARK @3 end")
		start := time.Now()
		w = openWatch(t, cms, watchList("5"))
		ev := <-w.ResultChan()
		err := apierrors.FromObject(ev.Object)
		if !apierrors.IsTimeout(err) || !apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) || time.Since(start) != 3*time.Second {
			t.Fatalf("got %s after %v, want a too large ERROR after 3s", describeEvent(ev), time.Since(start))
		}
		expectClosed(t, w)
		if srv.Stats().TooLarge != 1 {
			t.Fatalf("TooLarge = %d", srv.Stats().TooLarge)
		}
	})
}

func TestWatchListWithoutBookmarksHasNoEndMarker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, cms := newServer(t, cachetest.Options{})
		create(t, cms, "ns/a")
		opts := watchList("")
		opts.AllowWatchBookmarks = false
		expectEvents(t, openWatch(t, cms, opts), "ADDED ns/a@1")
		opts = watchList("")
		opts.SendInitialEvents = ptr.To(false)
		w := openWatch(t, cms, opts)
		create(t, cms, "ns/b")
		expectEvents(t, w, "ADDED ns/b@2")
	})
}

func TestWatchListRequestsAreValidated(t *testing.T) {
	_, cms := newServer(t, cachetest.Options{})
	opts := watchList("")
	opts.ResourceVersionMatch = ""
	if _, err := cms.Watch(opts); !apierrors.IsInvalid(err) {
		t.Fatalf("sendInitialEvents without resourceVersionMatch: %v, want Invalid", err)
	}
	if _, err := cms.Watch(metav1.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}); !apierrors.IsInvalid(err) {
		t.Fatalf("resourceVersionMatch on a plain watch: %v, want Invalid", err)
	}
	if _, err := cms.Watch(metav1.ListOptions{ResourceVersion: "x"}); !apierrors.IsInvalid(err) {
		t.Fatalf("garbage resourceVersion: %v, want Invalid", err)
	}
}

func TestDisabledWatchListIsRefusedLikeAnOldServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, cms := newServer(t, cachetest.Options{DisableWatchList: true})
		_, err := cms.Watch(watchList(""))
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "WatchList feature gate") {
			t.Fatalf("got %v, want 422 Invalid naming the feature gate", err)
		}
		create(t, cms, "ns/a")
		expectEvents(t, openWatch(t, cms, metav1.ListOptions{}), "ADDED ns/a@1")
	})
}
