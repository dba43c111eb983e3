//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache"
)

// Timings of TestQuietResourceIsNotStalled: the server ends each watch
// after quietWatchTimeout; the stall window is shorter than that, and
// longer than the minute between the watch cache's bookmarks.
const (
	quietWatchTimeout = 80 * time.Second
	quietStallWindow  = 70 * time.Second
	// quietMaxWatches bounds the watches the test waits through for one
	// that gets no bookmark (runs so far found one at the 2nd, 4th and
	// 5th); if none does, the test is skipped after its checks.
	quietMaxWatches = 7
	// quietBookmarkedWatches bounds the watches the test waits through
	// for the first one with a bookmark.
	quietBookmarkedWatches = 3
)

// TestQuietResourceIsNotStalled runs a Reflector on PodTemplates, which no
// other test writes, with a stall window shorter than its watches last.
// One write after the sync moves the type's resourceVersion, so the first
// watch gets bookmarks. A later watch starts at the newest resourceVersion
// and, the type being quiet, the watch cache sends it no bookmark at all:
// it must be allowed to run to the end the server gives it (a detector
// armed by the first watch's bookmarks used to end it as stalled after the
// window). The watch timeout is shortened in the ListerWatcher, as the
// Reflector asks for at least 5 minutes. The test takes about 3 minutes
// alone, 4 while the other tests still make the cluster move.
func TestQuietResourceIsNotStalled(t *testing.T) {
	t.Parallel()
	cs := client(t, testCluster.admin)
	ns := namespace(t, cs)
	templates := cs.CoreV1().PodTemplates(ns)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return templates.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.TimeoutSeconds = ptr.To(int64(quietWatchTimeout / time.Second))
			return templates.Watch(ctx, opts)
		},
	}
	health := &healthLog{}
	r := cache.NewReflectorWithOptions(lw, &corev1.PodTemplate{}, cache.NewStore(cache.MetaNamespaceKeyFunc), cache.ReflectorOptions{
		Name: "quiet", UseWatchList: ptr.To(false), StallWindow: quietStallWindow, OnHealthChange: health.record,
	})
	runReflector(t, r)
	mustSync(t, r)
	if _, err := templates.Create(t.Context(), podTemplate("only"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first := waitForABookmarkedWatch(t, r)
	quiet := waitForABookmarklessWatch(t, r, first+1)
	st := r.Stats()
	if n := st.WatchEnds[cache.WatchStalled]; n != 0 {
		t.Errorf("%d watches on a quiet resource ended as stalled", n)
	}
	health.mu.Lock()
	defer health.mu.Unlock()
	for _, h := range health.hs {
		if h.State != cache.Synced {
			t.Errorf("health went %v(%s) on a quiet resource: %v", h.State, h.Reason, h.LastError)
		}
	}
	if !quiet {
		// Not a failure of ours: something kept moving the cluster.
		t.Skipf("watches %d to %d each got bookmarks, so none showed the quiet case", first+1, quietMaxWatches)
	}
}

// waitForABookmarkedWatch waits, watch after watch, until one has ended
// with a bookmark, and returns its number (1 for the first). The first
// watch normally does, as the write after the sync moved the type past
// its resourceVersion; but the server may end a watch early, before a
// bookmark was due (a CI run saw the first watch end, without a bookmark,
// within 50 s while other tests loaded the cluster), and the Reflector
// then watches again from the same resourceVersion. It fails the test if
// none of quietBookmarkedWatches does, with the causes of their ends.
func waitForABookmarkedWatch(t *testing.T, r *cache.Reflector) uint64 {
	t.Helper()
	for n := uint64(1); n <= quietBookmarkedWatches; n++ {
		waitWatchesOpened(t, r, n+1)
		if got := r.Stats().Events[watch.Bookmark]; got > 0 {
			t.Logf("watch %d: %d bookmarks", n, got)
			return n
		}
	}
	t.Fatalf("none of the first %d watches got a bookmark: the scenario did not happen (watch ends: %v)", quietBookmarkedWatches, r.Stats().WatchEnds)
	return 0
}

// waitForABookmarklessWatch waits, watch after watch from watch from on,
// until one has ended without a bookmark. A quiet type's cache also moves
// on when etcd reports progress, which any consistent LIST in the cluster
// asks for (the other tests make them while they run), and then that
// watch gets bookmarks. It reports whether one did within
// quietMaxWatches.
func waitForABookmarklessWatch(t *testing.T, r *cache.Reflector, from uint64) bool {
	t.Helper()
	for n := from; n <= quietMaxWatches; n++ {
		before := r.Stats().Events[watch.Bookmark]
		waitWatchesOpened(t, r, n+1)
		got := r.Stats().Events[watch.Bookmark] - before
		t.Logf("watch %d: %d bookmarks", n, got)
		if got == 0 {
			return true
		}
	}
	return false
}

// waitWatchesOpened waits, up to twice the watch timeout, for r to have
// opened n watches.
func waitWatchesOpened(t *testing.T, r *cache.Reflector, n uint64) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 2*quietWatchTimeout, true, func(context.Context) (bool, error) {
		return r.Stats().WatchesOpened >= n, nil
	})
	if err != nil {
		t.Fatalf("watch %d did not open: %v (stats %+v)", n, err, r.Stats())
	}
}

// podTemplate is the smallest valid PodTemplate.
func podTemplate(name string) *corev1.PodTemplate {
	return &corev1.PodTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "example.invalid/none"}},
		}},
	}
}
