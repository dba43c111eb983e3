package cachetest_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache/cachetest"
)

func openWatch(t *testing.T, r *cachetest.Resource, opts metav1.ListOptions) watch.Interface {
	t.Helper()
	w, err := r.WatchWithContext(t.Context(), opts)
	if err != nil {
		t.Fatalf("watch %+v: %v", opts, err)
	}
	t.Cleanup(w.Stop)
	return w
}

func TestWatchFromEmptyOrZeroStartsWithTheState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, cms := newServer(t, cachetest.Options{CacheLag: 1})
		create(t, cms, "ns/b", "ns/a")
		w := openWatch(t, cms, metav1.ListOptions{})
		expectEvents(t, w, "ADDED ns/a@2", "ADDED ns/b@1")
		create(t, cms, "ns/c")
		expectEvents(t, w, "ADDED ns/c@3")
		stale := openWatch(t, cms, metav1.ListOptions{ResourceVersion: "0"})
		expectEvents(t, stale, "ADDED ns/a@2", "ADDED ns/b@1", "ADDED ns/c@3")
		update(t, cms, "ns/a") // 4; the cache (one behind) is at 3
		late := openWatch(t, cms, metav1.ListOptions{ResourceVersion: "0"})
		expectEvents(t, late, "ADDED ns/a@2", "ADDED ns/b@1", "ADDED ns/c@3", "MODIFIED ns/a@4")
	})
}

func TestWatchFromResourceVersionReplaysHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, cms := newServer(t, cachetest.Options{})
		create(t, cms, "ns/a")
		update(t, cms, "ns/a")
		remove(t, cms, "ns/a")
		create(t, cms, "ns/b")
		w := openWatch(t, cms, metav1.ListOptions{ResourceVersion: "1"})
		expectEvents(t, w, "MODIFIED ns/a@2", "DELETED ns/a@3", "ADDED ns/b@4")
	})
}

func TestWatchFromCompactedResourceVersionIsExpired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cms := newServer(t, cachetest.Options{HistoryLimit: 2})
		create(t, cms, "ns/a", "ns/b", "ns/c", "ns/d") // history keeps 3 and 4
		w := openWatch(t, cms, metav1.ListOptions{ResourceVersion: "1"})
		ev := <-w.ResultChan()
		if err := apierrors.FromObject(ev.Object); ev.Type != watch.Error || !apierrors.IsResourceExpired(err) ||
			err.Error() != "too old resource version: 1 (2)" {
			t.Fatalf("got %s, want a 410 ERROR event", describeEvent(ev))
		}
		expectClosed(t, w)
		expectEvents(t, openWatch(t, cms, metav1.ListOptions{ResourceVersion: "2"}), "ADDED ns/c@3", "ADDED ns/d@4")
		if err := srv.Compact("4"); err != nil {
			t.Fatal(err)
		}
		expectEvents(t, openWatch(t, cms, metav1.ListOptions{ResourceVersion: "3"}), "ERROR 410 Expired: too old resource version: 3 (4)")
		if srv.Stats().Expired != 2 {
			t.Fatalf("Expired = %d, want 2", srv.Stats().Expired)
		}
	})
}

func TestCompactRefusesBadResourceVersions(t *testing.T) {
	srv, cms := newServer(t, cachetest.Options{})
	create(t, cms, "ns/a")
	if err := srv.Compact("2"); err == nil {
		t.Error("compacting beyond the newest resourceVersion must fail")
	}
	if err := srv.Compact("x"); err == nil {
		t.Error("compacting to garbage must fail")
	}
}

func TestWatchFromFutureResourceVersionWaitsSilently(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, cms := newServer(t, cachetest.Options{})
		create(t, cms, "ns/a")
		w := openWatch(t, cms, metav1.ListOptions{ResourceVersion: "3", AllowWatchBookmarks: true})
		create(t, cms, "ns/b")
		time.Sleep(90 * time.Second) // no bookmark may go back before the watch's start
		create(t, cms, "ns/c")
		expectEvents(t, w)
		create(t, cms, "ns/d")
		expectEvents(t, w, "ADDED ns/d@4")
		time.Sleep(30 * time.Second)
		expectEvents(t, w, "BOOKMARK @4")
	})
}

func TestWatchSelectorsTurnUpdatesIntoAddsAndDeletes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, cms := newServer(t, cachetest.Options{})
		ctx := t.Context()
		w := openWatch(t, cms.Namespace("ns"), metav1.ListOptions{ResourceVersion: "0", LabelSelector: "app=web"})
		byName := openWatch(t, cms, metav1.ListOptions{ResourceVersion: "0", FieldSelector: "metadata.name=a"})
		set := func(ns, app string) {
			t.Helper()
			if _, err := cms.Update(ctx, cm(ns, "a", "app", app), metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := cms.CreateAll(ctx, cm("ns", "a", "app", "web"), cm("other", "a", "app", "web")); err != nil {
			t.Fatal(err)
		}
		set("ns", "db")  // 3: leaves the selector
		set("ns", "web") // 4: enters it again
		set("ns", "web") // no change: no event
		expectEvents(t, w, "ADDED ns/a@1", "DELETED ns/a@3", "ADDED ns/a@4")
		expectEvents(t, byName, "ADDED ns/a@1", "ADDED other/a@2", "MODIFIED ns/a@3", "MODIFIED ns/a@4")
	})
}

func TestBookmarksCarryTheTypesNewestResourceVersion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cms := newServer(t, cachetest.Options{})
		pods := srv.Resource(cachetest.Type{Resource: "pods", Object: &corev1.Pod{}, List: &corev1.PodList{}})
		create(t, cms, "a/x")
		w := openWatch(t, cms.Namespace("a"), metav1.ListOptions{ResourceVersion: "1", AllowWatchBookmarks: true})
		quiet := openWatch(t, cms, metav1.ListOptions{ResourceVersion: "1"})
		create(t, cms, "b/x")
		if _, err := pods.Create(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(59 * time.Second)
		expectEvents(t, w)
		time.Sleep(time.Second)
		ev := <-w.ResultChan()
		bm, ok := ev.Object.(*corev1.ConfigMap)
		// 2, the newest ConfigMap change (outside the watch's namespace):
		// the Pod's 3 is another type's and does not move this one.
		if ev.Type != watch.Bookmark || !ok || bm.ResourceVersion != "2" || bm.Name != "" {
			t.Fatalf("got %s (%T), want a ConfigMap BOOKMARK with only resourceVersion 2", describeEvent(ev), ev.Object)
		}
		time.Sleep(time.Minute)
		expectEvents(t, w, "BOOKMARK @2")
		expectEvents(t, quiet, "ADDED b/x@2")
	})
}

// A watch that starts at its type's newest resourceVersion gets no
// bookmark until that type changes, as in kube-apiserver, whatever other
// types do; then it gets one every interval, changes or not.
func TestQuietTypeGetsNoBookmark(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cms := newServer(t, cachetest.Options{})
		pods := srv.Resource(cachetest.Type{Resource: "pods", Object: &corev1.Pod{}, List: &corev1.PodList{}})
		create(t, cms, "a/x")
		w := openWatch(t, cms, metav1.ListOptions{ResourceVersion: "1", AllowWatchBookmarks: true})
		if _, err := pods.Create(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Minute)
		expectEvents(t, w)
		create(t, cms, "a/y") // 3
		time.Sleep(time.Minute)
		expectEvents(t, w, "ADDED a/y@3", "BOOKMARK @3")
		for range 3 {
			time.Sleep(time.Minute)
			expectEvents(t, w, "BOOKMARK @3")
		}
	})
}

func TestWatchEndsAtItsTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, cms := newServer(t, cachetest.Options{MinRequestTimeout: time.Hour})
		w := openWatch(t, cms, metav1.ListOptions{TimeoutSeconds: ptr.To[int64](10)})
		unset := openWatch(t, cms, metav1.ListOptions{})
		time.Sleep(10*time.Second - time.Nanosecond)
		expectEvents(t, w)
		time.Sleep(time.Nanosecond)
		expectClosed(t, w)
		time.Sleep(time.Hour - 10*time.Second - time.Nanosecond)
		expectEvents(t, unset)
		time.Sleep(time.Nanosecond)
		expectClosed(t, unset)
	})
}

func TestWatchEndsOnStopAndContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, cms := newServer(t, cachetest.Options{})
		w := openWatch(t, cms, metav1.ListOptions{})
		w.Stop()
		w.Stop()
		expectClosed(t, w)
		ctx, cancel := context.WithCancel(t.Context())
		w, err := cms.WatchWithContext(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		expectClosed(t, w)
	})
}

func TestCloseEndsWatchesAndRefusesCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := cachetest.NewServer(cachetest.Options{})
		cms := srv.Resource(configMaps)
		w := openWatch(t, cms, metav1.ListOptions{})
		srv.Close()
		if _, open := <-w.ResultChan(); open {
			t.Fatal("the watch must be closed once Close returns")
		}
		if _, err := cms.List(metav1.ListOptions{}); err == nil {
			t.Fatal("a closed server must refuse calls")
		}
		srv.Close()
	})
}

func TestSlowConsumerLosesItsWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cms := newServer(t, cachetest.Options{WatchBuffer: 3})
		w := openWatch(t, cms, metav1.ListOptions{ResourceVersion: "0"})
		create(t, cms, "ns/a")
		synctest.Wait() // the watch now holds ns/a, waiting for the consumer
		create(t, cms, "ns/b", "ns/c", "ns/d")
		expectEvents(t, openWatch(t, cms, metav1.ListOptions{ResourceVersion: "3"}), "ADDED ns/d@4")
		create(t, cms, "ns/e")
		expectClosed(t, w)
		if n := srv.Stats().SlowWatchesClosed; n != 1 {
			t.Fatalf("SlowWatchesClosed = %d", n)
		}
	})
}

func TestWatchEventsAreCopies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, cms := newServer(t, cachetest.Options{})
		a, b := openWatch(t, cms, metav1.ListOptions{ResourceVersion: "0"}), openWatch(t, cms, metav1.ListOptions{ResourceVersion: "0"})
		create(t, cms, "ns/a")
		ev := <-a.ResultChan()
		ev.Object.(*corev1.ConfigMap).Name = "mutated"
		if got := describeEvent(<-b.ResultChan()); got != "ADDED ns/a@1" {
			t.Fatalf("another watch saw %s", got)
		}
		if objs, _ := cms.Objects(); id(objs[0]) != "ns/a@1" {
			t.Fatalf("server holds %s", id(objs[0]))
		}
	})
}

// A watch that allows bookmarks gets one 2 s before its timeout, as
// kube-apiserver's watch cache sends it (so a client can tell it has been
// sent every change up to then); none when the timeout is 2 s or less, or
// when its type has not changed since the watch's start.
func TestBookmarkTwoSecondsBeforeTheTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, cms := newServer(t, cachetest.Options{})
		create(t, cms, "a/x") // 1
		create(t, cms, "a/y") // 2
		w := openWatch(t, cms, metav1.ListOptions{ResourceVersion: "1", AllowWatchBookmarks: true, TimeoutSeconds: ptr.To[int64](3)})
		short := openWatch(t, cms, metav1.ListOptions{ResourceVersion: "1", AllowWatchBookmarks: true, TimeoutSeconds: ptr.To[int64](2)})
		quiet := openWatch(t, cms, metav1.ListOptions{ResourceVersion: "2", AllowWatchBookmarks: true, TimeoutSeconds: ptr.To[int64](3)})
		time.Sleep(time.Second - time.Nanosecond)
		expectEvents(t, w, "ADDED a/y@2")
		time.Sleep(time.Nanosecond)
		expectEvents(t, w, "BOOKMARK @2")
		expectEvents(t, short, "ADDED a/y@2")
		time.Sleep(2 * time.Second)
		expectClosed(t, w)
		expectClosed(t, short)
		expectClosed(t, quiet)
	})
}
