package cachetest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kreflector/cache/cachetest"
)

// next returns the watch's next event, described, or "closed".
func next(ctx context.Context, t *testing.T, w watch.Interface) string {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			return "closed"
		}
		return describeEvent(ev)
	case <-ctx.Done():
		t.Fatalf("no watch event: %v", ctx.Err())
		return ""
	}
}

// expectNext fails t unless the watch's next events are want.
func expectNext(ctx context.Context, t *testing.T, w watch.Interface, want ...string) {
	t.Helper()
	for _, wnt := range want {
		if got := next(ctx, t, w); got != wnt {
			t.Fatalf("event %q, want %q", got, wnt)
		}
	}
}

// A clientset watch gets the changes after its resourceVersion, bookmarks
// on the server's clock, and ends at its timeoutSeconds.
func TestHTTPWatchBookmarksAndTimeout(t *testing.T) {
	fc := clocktesting.NewFakeClock(time.Unix(1e9, 0))
	_, cms, cs := startHTTP(t, cachetest.Options{Clock: fc})
	ctx := bounded(t)
	create(t, cms, "ns/a")
	c := cs.CoreV1().ConfigMaps("ns")

	w, err := c.Watch(ctx, metav1.ListOptions{ResourceVersion: "1", AllowWatchBookmarks: true, TimeoutSeconds: ptr.To[int64](600)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	create(t, cms, "ns/b")
	// Once an event has come, the watch's timers exist: steps reach them.
	expectNext(ctx, t, w, "ADDED ns/b@2")
	fc.Step(time.Minute)
	expectNext(ctx, t, w, "BOOKMARK @2")
	update(t, cms, "ns/b")
	remove(t, cms, "ns/a")
	expectNext(ctx, t, w, "MODIFIED ns/b@3", "DELETED ns/a@4")

	short, err := c.Watch(ctx, metav1.ListOptions{ResourceVersion: "4", TimeoutSeconds: ptr.To[int64](30)})
	if err != nil {
		t.Fatal(err)
	}
	defer short.Stop()
	create(t, cms, "ns/c")
	expectNext(ctx, t, short, "ADDED ns/c@5")
	fc.Step(30 * time.Second)
	expectNext(ctx, t, short, "closed")
}

// A watch from a compacted resourceVersion gets a 410 ERROR event, which
// client-go turns back into an error apierrors recognises.
func TestHTTPWatchExpired(t *testing.T) {
	srv, cms, cs := startHTTP(t, cachetest.Options{})
	ctx := bounded(t)
	create(t, cms, "ns/a", "ns/b", "ns/c")
	if err := srv.Compact("2"); err != nil {
		t.Fatal(err)
	}
	w, err := cs.CoreV1().ConfigMaps("ns").Watch(ctx, metav1.ListOptions{ResourceVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ev := <-w.ResultChan()
	if err := apierrors.FromObject(ev.Object); ev.Type != watch.Error || !apierrors.IsResourceExpired(err) {
		t.Fatalf("event %s %v, want ERROR 410 Expired", ev.Type, err)
	}
	expectNext(ctx, t, w, "closed")
}

// sendInitialEvents streams the state, the annotated bookmark, then the
// changes.
func TestHTTPWatchList(t *testing.T) {
	srv, cms, cs := startHTTP(t, cachetest.Options{})
	ctx := bounded(t)
	create(t, cms, "ns/a", "ns/b")
	w, err := cs.CoreV1().ConfigMaps("ns").Watch(ctx, metav1.ListOptions{
		SendInitialEvents:    ptr.To(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks:  true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	create(t, cms, "ns/c")
	expectNext(ctx, t, w, "ADDED ns/a@1", "ADDED ns/b@2", "BOOKMARK @2 end", "ADDED ns/c@3")
	if n := srv.Stats().WatchLists; n != 1 {
		t.Fatalf("WatchLists %d, want 1", n)
	}
}

// On the wire a watch is a 200 with the stream media type and one JSON
// event per line carrying apiVersion and kind; watching a named object
// sees only it; CloseWatches ends the response cleanly.
func TestHTTPWatchWire(t *testing.T) {
	srv, cms, _ := startHTTP(t, cachetest.Options{})
	ctx := bounded(t)
	create(t, cms, "ns/a", "ns/b")
	resp := rawGet(ctx, t, srv, "/api/v1/namespaces/ns/configmaps/b?watch=1&resourceVersion=0", "")
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "application/json;stream=watch" {
		t.Fatalf("%d %q", resp.StatusCode, ct)
	}
	lines := bufio.NewScanner(resp.Body)
	if !lines.Scan() {
		t.Fatalf("no event: %v", lines.Err())
	}
	var ev struct {
		Type   string `json:"type"`
		Object struct {
			APIVersion string            `json:"apiVersion"`
			Kind       string            `json:"kind"`
			Metadata   metav1.ObjectMeta `json:"metadata"`
		} `json:"object"`
	}
	if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Type != "ADDED" || ev.Object.APIVersion != "v1" || ev.Object.Kind != "ConfigMap" || ev.Object.Metadata.Name != "b" {
		t.Fatalf("first line %s", lines.Text())
	}
	if n := srv.CloseWatches(); n != 1 {
		t.Fatalf("closed %d watches, want 1", n)
	}
	if lines.Scan() || lines.Err() != nil {
		t.Fatalf("after CloseWatches: line %q, error %v; want a clean end", lines.Text(), lines.Err())
	}
}

// A dropped watch is accepted and silent until its timeout; a hung one
// goes silent.
func TestHTTPWatchDroppedAndHung(t *testing.T) {
	fc := clocktesting.NewFakeClock(time.Unix(1e9, 0))
	srv, cms, cs := startHTTP(t, cachetest.Options{Clock: fc})
	ctx := bounded(t)
	c := cs.CoreV1().ConfigMaps("ns")
	srv.DropNextWatches(1)
	dropped, err := c.Watch(ctx, metav1.ListOptions{TimeoutSeconds: ptr.To[int64](60)})
	if err != nil {
		t.Fatal(err)
	}
	defer dropped.Stop()
	live, err := c.Watch(ctx, metav1.ListOptions{TimeoutSeconds: ptr.To[int64](120)})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Stop()
	create(t, cms, "ns/a")
	expectNext(ctx, t, live, "ADDED ns/a@1")
	eventually(ctx, t, "the dropped watch's timer", func() bool { return fc.Waiters() >= 2 })
	fc.Step(time.Minute)
	expectNext(ctx, t, dropped, "closed")

	if n := srv.HangWatches(); n != 1 {
		t.Fatalf("hung %d watches, want 1", n)
	}
	create(t, cms, "ns/b")
	fc.Step(time.Minute)
	expectNext(ctx, t, live, "closed")
	if st := srv.Stats(); st.Faults[cachetest.FaultDropWatch] != 1 || st.Faults[cachetest.FaultHangWatch] != 1 || st.Events != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// Over HTTP, CloseNextWatches is a 200 whose stream ends at once with
// nothing in it (the client's watch closes without an error), and
// FailNextWatchStreams a 200 whose stream holds one ERROR event, which
// client-go turns back into the status.
func TestHTTPFaultWatchClosedEmptyOrEndedByAnError(t *testing.T) {
	srv, cms, cs := startHTTP(t, cachetest.Options{})
	ctx := bounded(t)
	create(t, cms, "ns/a")
	c := cs.CoreV1().ConfigMaps("ns")
	srv.CloseNextWatches(1, 0)
	srv.FailNextWatchStreams(1, cachetest.InternalError())
	opts := metav1.ListOptions{ResourceVersion: "0", TimeoutSeconds: ptr.To[int64](60)}
	empty, err := c.Watch(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Stop()
	expectNext(ctx, t, empty, "closed")
	failed, err := c.Watch(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer failed.Stop()
	expectNext(ctx, t, failed, "ERROR 500 InternalError: Internal error occurred: cachetest: injected internal error", "closed")
	ok, err := c.Watch(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer ok.Stop()
	expectNext(ctx, t, ok, "ADDED ns/a@1")
	if st := srv.Stats(); st.Faults[cachetest.FaultEmptyWatch] != 1 || st.Faults[cachetest.FaultInternalError] != 1 {
		t.Fatalf("faults %v", st.Faults)
	}
}
