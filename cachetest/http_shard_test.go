package cachetest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/cachetest"
)

// A clientset's sharded LISTs get the shard with the echo, and the shards
// of 2 and 4 replicas partition the objects, page by page; on the wire
// the shardSelector query parameter is read and the list's metadata holds
// shardInfo.
func TestHTTPShardedList(t *testing.T) {
	srv, cms, cs := startHTTP(t, cachetest.Options{})
	ctx := bounded(t)
	createHalves(t, cms)
	c := cs.CoreV1().ConfigMaps("")
	l, err := c.List(ctx, metav1.ListOptions{ShardSelector: lowerHalf})
	if err != nil || !equal(cmNames(l), []string{"lo1", "lo2"}) || shardInfo(l) != lowerHalf {
		t.Fatalf("%v with ShardInfo %s, %v; want lo1, lo2 with the echo", cmNames(l), shardInfo(l), err)
	}
	var raw struct {
		Metadata struct {
			ShardInfo struct{ Selector string } `json:"shardInfo"`
		} `json:"metadata"`
		Items []json.RawMessage `json:"items"`
	}
	getJSON(ctx, t, srv, "/api/v1/namespaces/ns/configmaps?shardSelector="+url.QueryEscape(upperHalf), &raw)
	if raw.Metadata.ShardInfo.Selector != upperHalf || len(raw.Items) != 2 {
		t.Fatalf("wire: shardInfo.selector %q and %d items, want the echo and 2", raw.Metadata.ShardInfo.Selector, len(raw.Items))
	}
	for _, o := range halves {
		remove(t, cms, o.key)
	}
	expectPartition(t, func(opts metav1.ListOptions) (*corev1.ConfigMapList, error) { return c.List(ctx, opts) }, spreadUIDs(t, cms, 24))
}

// getJSON GETs path on srv with its client and decodes the 200 answer.
func getJSON(ctx context.Context, t *testing.T, srv *cachetest.Server, path string, out any) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}

// A clientset's sharded watch and WatchList get only the shard's events
// (and the end bookmark).
func TestHTTPShardedWatchAndWatchList(t *testing.T) {
	_, cms, cs := startHTTP(t, cachetest.Options{})
	ctx := bounded(t)
	createHalves(t, cms)
	c := cs.CoreV1().ConfigMaps("ns")
	w, err := c.Watch(ctx, metav1.ListOptions{ShardSelector: lowerHalf, ResourceVersion: "4"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	wl, err := c.Watch(ctx, metav1.ListOptions{ShardSelector: upperHalf, SendInitialEvents: ptr.To(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer wl.Stop()
	update(t, cms, "ns/hi1") // 5
	update(t, cms, "ns/lo1") // 6
	remove(t, cms, "ns/hi2") // 7
	remove(t, cms, "ns/lo2") // 8
	expectNext(ctx, t, w, "MODIFIED ns/lo1@6", "DELETED ns/lo2@8")
	expectNext(ctx, t, wl, "ADDED ns/hi1@1", "ADDED ns/hi2@2", "BOOKMARK @4 end", "MODIFIED ns/hi1@5", "DELETED ns/hi2@7")
	createUID(t, cms, "ns/hi3", "red")  // 9
	createUID(t, cms, "ns/lo3", "beta") // 10
	expectNext(ctx, t, w, "ADDED ns/lo3@10")
	expectNext(ctx, t, wl, "ADDED ns/hi3@9")
}

// Over HTTP a malformed shard selector is a 400 Status carrying the parse
// error, for a LIST and for a watch.
func TestHTTPShardSelectorMalformed(t *testing.T) {
	_, cms, cs := startHTTP(t, cachetest.Options{})
	ctx := bounded(t)
	createHalves(t, cms)
	sel := "shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')"
	_, parseErr := cache.ParseShard(sel)
	want := "invalid shard selector: " + parseErr.Error()
	c := cs.CoreV1().ConfigMaps("ns")
	_, listErr := c.List(ctx, metav1.ListOptions{ShardSelector: sel})
	_, watchErr := c.Watch(ctx, metav1.ListOptions{ShardSelector: sel})
	for verb, err := range map[string]error{"list": listErr, "watch": watchErr} {
		if !apierrors.IsBadRequest(err) || err.Error() != want {
			t.Errorf("%s: %v; want 400 %q", verb, err, want)
		}
	}
}

// With the gate off a clientset's sharded LIST gets everything and no
// ShardInfo, a malformed selector included.
func TestHTTPShardSelectorIgnoredWithTheGateOff(t *testing.T) {
	_, cms, cs := startHTTP(t, cachetest.Options{DisableShardedListAndWatch: true})
	ctx := bounded(t)
	createHalves(t, cms)
	for _, sel := range []string{lowerHalf, "not a selector"} {
		l, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{ShardSelector: sel})
		if err != nil || !equal(cmNames(l), []string{"hi1", "hi2", "lo1", "lo2"}) || l.ShardInfo != nil {
			t.Errorf("%q: %v with ShardInfo %s, %v; want everything without", sel, cmNames(l), shardInfo(l), err)
		}
	}
}

// A Reflector whose ListWatch sends a shard selector holds every object
// while the server's gate is off. Turned on, the gate shapes the requests
// that follow: once the Reflector relists (here: its watch, pinned by a
// hang, is closed and its resourceVersion compacted), it holds its shard
// only.
func TestHTTPReflectorPicksUpTheShardGate(t *testing.T) {
	for _, useWatchList := range []bool{true, false} {
		t.Run(fmt.Sprint("UseWatchList=", useWatchList), func(t *testing.T) {
			srv, cms, cs := startHTTP(t, cachetest.Options{DisableShardedListAndWatch: true})
			ctx := bounded(t)
			createHalves(t, cms)
			lw := cache.NewFilteredListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", metav1.NamespaceAll,
				func(o *metav1.ListOptions) { o.ShardSelector = lowerHalf })
			store := cachetest.NewRecordingStore(nil)
			r := cache.NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, cache.ReflectorOptions{UseWatchList: ptr.To(useWatchList)})
			runCtx, stop := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); r.RunWithContext(runCtx) }()
			defer func() { stop(); <-done }()
			expectKeys(ctx, t, store, "ns/hi1", "ns/hi2", "ns/lo1", "ns/lo2")

			eventually(ctx, t, "an open watch to hang", func() bool { return srv.HangWatches() > 0 })
			srv.SetShardedListAndWatch(true)
			createUID(t, cms, "ns/lo3", "beta")
			createUID(t, cms, "ns/hi3", "red")
			if err := srv.Compact(srv.ResourceVersion()); err != nil {
				t.Fatal(err)
			}
			srv.CloseWatches()
			expectKeys(ctx, t, store, "ns/lo1", "ns/lo2", "ns/lo3")
		})
	}
}

// expectKeys waits for the store to hold exactly the keys, in order.
func expectKeys(ctx context.Context, t *testing.T, store *cachetest.RecordingStore, keys ...string) {
	t.Helper()
	if err := store.WaitFor(ctx, func() bool { return equal(store.ListKeys(), keys) }); err != nil {
		t.Fatalf("the store holds %v, want %v: %v", store.ListKeys(), keys, err)
	}
}
