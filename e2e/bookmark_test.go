//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache"
)

// bookmarkWait bounds the wait for a bookmark: the watch cache offers one
// to each watcher about a minute after the watch starts, and then each
// minute after that.
const bookmarkWait = 150 * time.Second

// TestBookmarksReachTheStore waits for a bookmark from the server to
// reach a store implementing ReflectorBookmarkStore, after a sync by LIST
// and by WatchList. The watch cache sends each watcher one about a minute
// after the last (after a WatchList sometimes sooner), but only at a
// resourceVersion newer than the one the watch started from: a cluster
// where no ConfigMap changes sends none. So each subtest writes a ConfigMap
// in a namespace of its own after the sync, as any busy cluster would, and
// the bookmark must be at or past that write. The test runs in parallel
// with the other tests that leave the servers alone; on a machine with few
// cores its minute still holds one of the parallel slots (-parallel
// defaults to GOMAXPROCS).
func TestBookmarksReachTheStore(t *testing.T) {
	t.Parallel()
	cs := client(t, testCluster.admin)
	elsewhere := namespace(t, cs)
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
			moved := moveConfigMapsRV(t, cs, elsewhere, fmt.Sprintf("nudge-%v", watchList))
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
			assertBookmarkAfter(t, bookmarks[0], moved)
			// Stats take in a burst of events after the store has had them.
			err = wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
				return r.Stats().Events[watch.Bookmark] > 0, nil
			})
			if err != nil {
				t.Errorf("Stats count no bookmark event: %v", err)
			}
			assertMatchesServer(t, cs, "configmaps", ns, "store", s.List())
		})
	}
}

// moveConfigMapsRV creates the ConfigMap name in ns and returns its
// resourceVersion. Every ConfigMap watch, whatever its namespace, is
// offered bookmarks at that resourceVersion or later from then on.
func moveConfigMapsRV(t *testing.T, cs kubernetes.Interface, ns, name string) string {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
	got, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got.ResourceVersion
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
