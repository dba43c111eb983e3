//go:build e2e

package e2e

import (
	"context"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kreflector/cache"
)

// bookmarkWait bounds the wait for a bookmark: the watch cache sends one
// to each watcher roughly every minute.
const bookmarkWait = 150 * time.Second

// TestBookmarksReachTheStore waits for the server's periodic bookmark to
// reach a store implementing ReflectorBookmarkStore. It runs in parallel
// with the other tests that leave the servers alone, so its minute of
// waiting costs no wall time of its own.
func TestBookmarksReachTheStore(t *testing.T) {
	t.Parallel()
	cs := client(t, testCluster.admin)
	ns := namespace(t, cs)
	mustCreateConfigMaps(t, cs, ns, 10)
	s := cache.NewStore(cache.MetaNamespaceKeyFunc)
	store := track(s)
	r := cache.NewReflectorWithOptions(configMapsLW(cs, ns), &corev1.ConfigMap{}, store, cache.ReflectorOptions{Name: "bookmarks"})
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
	got, err := strconv.ParseUint(bookmarks[0], 10, 64)
	if err != nil {
		t.Fatalf("bookmark RV %q: %v", bookmarks[0], err)
	}
	if list, _ := strconv.ParseUint(listRV, 10, 64); got < list {
		t.Errorf("bookmark RV %d is older than the list RV %d", got, list)
	}
	if n := r.Stats().Events[watch.Bookmark]; n == 0 {
		t.Errorf("Stats count no bookmark event")
	}
	assertMatchesServer(t, cs, "configmaps", ns, "store", s.List())
}
