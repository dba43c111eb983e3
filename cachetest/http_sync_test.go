package cachetest_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	clientcache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/cachetest"
)

// Our Reflector, fed by client-go's REST client over HTTP, follows a
// workload through a closed watch, a 429 with Retry-After on the re-watch,
// and a hung watch whose re-watch finds its resourceVersion compacted;
// after each, its store equals the server's state.
func TestHTTPReflectorConverges(t *testing.T) {
	for _, tc := range []struct {
		name         string
		useWatchList bool
	}{{"WatchList", true}, {"LIST", false}} {
		t.Run(tc.name, func(t *testing.T) {
			srv, cms, cs := startHTTP(t, cachetest.Options{})
			ctx := bounded(t)
			create(t, cms, "ns/a", "ns/b", "other/c")
			lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", metav1.NamespaceAll, fields.Everything())
			store := cachetest.NewRecordingStore(nil)
			r := cache.NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, cache.ReflectorOptions{UseWatchList: ptr.To(tc.useWatchList)})
			runCtx, stop := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); r.RunWithContext(runCtx) }()
			defer func() { stop(); <-done }()

			converge(ctx, t, srv, cms, store, "initial sync")
			srv.FailNext(cachetest.VerbWatch, 1, cachetest.TooManyRequests(time.Second))
			srv.CloseWatches()
			update(t, cms, "ns/a")
			create(t, cms, "ns/d")
			converge(ctx, t, srv, cms, store, "a closed watch and a 429")

			// Hanging the open watch pins the Reflector to the current
			// resourceVersion while the server moves on and compacts.
			eventually(ctx, t, "an open watch to hang", func() bool { return srv.HangWatches() > 0 })
			remove(t, cms, "ns/b")
			update(t, cms, "other/c")
			create(t, cms, "ns/e")
			if err := srv.Compact(srv.ResourceVersion()); err != nil {
				t.Fatal(err)
			}
			srv.CloseWatches()
			converge(ctx, t, srv, cms, store, "a compacted re-watch")

			// A re-watch from the pinned resourceVersion gets 410 and the
			// Reflector relists; after a failed watch a WatchList Reflector
			// streams again from that resourceVersion instead, which a
			// WatchList (NotOlderThan) serves without 410.
			st := srv.Stats()
			if st.EarlyRetries != 0 || st.Faults[cachetest.FaultTooManyRequests] != 1 {
				t.Errorf("early retries %d, 429s %d; want none, 1", st.EarlyRetries, st.Faults[cachetest.FaultTooManyRequests])
			}
			if tc.useWatchList && (st.WatchLists < 2 || st.Lists != 0) || !tc.useWatchList && (st.Lists < 2 || st.WatchLists != 0 || st.Expired == 0) {
				t.Errorf("WatchLists %d, Lists %d, 410s %d for UseWatchList=%v", st.WatchLists, st.Lists, st.Expired, tc.useWatchList)
			}
		})
	}
}

// converge waits for the store to reach the server's resourceVersion and
// then requires it to hold exactly the server's objects.
func converge(ctx context.Context, t *testing.T, srv *cachetest.Server, cms *cachetest.Resource, store *cachetest.RecordingStore, after string) {
	t.Helper()
	err := store.WaitFor(ctx, func() bool { return store.LastStoreSyncResourceVersion() == srv.ResourceVersion() })
	if err != nil {
		t.Fatalf("after %s: the store is at %q, the server at %s: %v", after, store.LastStoreSyncResourceVersion(), srv.ResourceVersion(), err)
	}
	objs, _ := cms.Objects()
	if d := cachetest.Compare(objs, store.List()); !d.Empty() {
		t.Fatalf("after %s: %v", after, d)
	}
}

// client-go's own SharedInformerFactory syncs over HTTP with a WatchList
// stream (its default), never LISTing, and its handler sees a later
// update.
func TestHTTPClientGoInformer(t *testing.T) {
	srv, cms, cs := startHTTP(t, cachetest.Options{})
	ctx := bounded(t)
	create(t, cms, "ns/a", "ns/b")
	f := informers.NewSharedInformerFactory(cs, 0)
	inf := f.Core().V1().ConfigMaps().Informer()
	updates := make(chan string, 10)
	if _, err := inf.AddEventHandler(clientcache.ResourceEventHandlerFuncs{UpdateFunc: func(_, obj any) {
		c := obj.(*corev1.ConfigMap)
		updates <- c.Namespace + "/" + c.Name + "@" + c.ResourceVersion
	}}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	f.Start(stop)
	defer func() { close(stop); f.Shutdown() }()
	if !clientcache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("the informer did not sync")
	}
	if st := srv.Stats(); st.WatchLists != 1 || st.Lists != 0 {
		t.Fatalf("WatchLists %d, Lists %d: want the sync to be one WatchList stream", st.WatchLists, st.Lists)
	}
	if keys := inf.GetStore().ListKeys(); len(keys) != 2 {
		t.Fatalf("informer store %v", keys)
	}
	update(t, cms, "ns/a")
	select {
	case got := <-updates:
		if got != "ns/a@3" {
			t.Fatalf("update %s, want ns/a@3", got)
		}
	case <-ctx.Done():
		t.Fatal("the informer saw no update")
	}
}
