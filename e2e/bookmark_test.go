//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache"
)

// bookmarkWait bounds the wait for a bookmark: the watch cache sends one
// to each watcher roughly every minute.
const bookmarkWait = 150 * time.Second

// TestBookmarksReachTheStore waits for a bookmark from the server to
// reach a store implementing ReflectorBookmarkStore, after a sync by LIST
// and by WatchList. The watch cache sends each watcher one about a minute
// after the last (after a WatchList sometimes sooner). The test runs in
// parallel with the other tests that leave the servers alone, so its
// minute of waiting costs little wall time of its own.
func TestBookmarksReachTheStore(t *testing.T) {
	t.Parallel()
	cs := client(t, testCluster.admin)
	for _, watchList := range []bool{false, true} {
		t.Run(fmt.Sprintf("watchList=%v", watchList), func(t *testing.T) {
			t.Parallel()
			ns := namespace(t, cs)
			mustCreateConfigMaps(t, cs, ns, 10)
			s := cache.NewStore(cache.MetaNamespaceKeyFunc)
			store := track(s)
			r := cache.NewReflectorWithOptions(configMapsLW(cs, ns), &corev1.ConfigMap{}, store, cache.ReflectorOptions{Name: "bookmarks", UseWatchList: ptr.To(watchList)})
			runReflector(t, r)
			mustSync(t, r)
			start := time.Now()
			ctx, cancel := context.WithTimeout(t.Context(), bookmarkWait)
			defer cancel()
			err := store.n.waitUntil(ctx, func() bool {
				_, _, bookmarks := store.state()
				return len(bookmarks) > 0
			})
			if err != nil {
				t.Fatalf("no bookmark reached the store within %v: %v", bookmarkWait, err)
			}
			_, listRV, bookmarks := store.state()
			t.Logf("bookmark at RV %s after %v; list RV %s", bookmarks[0], time.Since(start).Round(time.Second), listRV)
			assertBookmarkAfter(t, bookmarks[0], listRV)
			if n := r.Stats().Events[watch.Bookmark]; n == 0 {
				t.Errorf("Stats count no bookmark event")
			}
			assertMatchesServer(t, cs, "configmaps", ns, "store", s.List())
		})
	}
}

// assertBookmarkAfter fails t unless bookmark is a resourceVersion not
// older than listRV.
func assertBookmarkAfter(t *testing.T, bookmark, listRV string) {
	t.Helper()
	got, err := strconv.ParseUint(bookmark, 10, 64)
	if err != nil {
		t.Fatalf("bookmark RV %q: %v", bookmark, err)
	}
	list, err := strconv.ParseUint(listRV, 10, 64)
	if err != nil {
		t.Fatalf("list RV %q: %v", listRV, err)
	}
	if got < list {
		t.Errorf("bookmark RV %d is older than the list RV %d", got, list)
	}
}
