package cachetest_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/cachetest"
)

// A Reflector fed by the fake server, writing into a RecordingStore; the
// test waits for the store to reach the server's state without polling.
func Example() {
	srv := cachetest.NewServer(cachetest.Options{})
	defer srv.Close()
	cms := srv.Resource(cachetest.Type{Resource: "configmaps", Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, name := range []string{"a", "b"} {
		_, _ = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name}}, metav1.CreateOptions{})
	}

	store := cachetest.NewRecordingStore(nil)
	r := cache.NewReflectorWithOptions(cms, &corev1.ConfigMap{}, store, cache.ReflectorOptions{Name: "example"})
	done := make(chan struct{})
	go func() { r.RunWithContext(ctx); close(done) }()

	_, _ = cms.Delete(ctx, "demo", "a", metav1.DeleteOptions{})
	_ = store.WaitFor(ctx, func() bool { return store.LastStoreSyncResourceVersion() == srv.ResourceVersion() })
	objs, rv := cms.Objects()
	fmt.Println("server at", rv, "store:", cachetest.Compare(objs, store.List()))
	cancel()
	<-done
	// Output: server at 3 store: store matches server
}

// Pages read one snapshot, whatever changes between them.
func ExampleResource_ListWithContext() {
	srv := cachetest.NewServer(cachetest.Options{})
	defer srv.Close()
	cms := srv.Resource(cachetest.Type{Resource: "configmaps", Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}})
	ctx := context.Background()
	for _, name := range []string{"a", "b", "c"} {
		_, _ = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name}}, metav1.CreateOptions{})
	}
	opts := metav1.ListOptions{Limit: 2}
	for {
		out, err := cms.ListWithContext(ctx, opts)
		if err != nil {
			fmt.Println(err)
			return
		}
		page := out.(*corev1.ConfigMapList)
		for _, c := range page.Items {
			fmt.Printf("%s@%s ", c.Name, c.ResourceVersion)
		}
		fmt.Println("list at", page.ResourceVersion)
		if page.Continue == "" {
			return
		}
		_, _ = cms.Delete(ctx, "demo", "c", metav1.DeleteOptions{}) // not seen by the next page
		opts.Continue = page.Continue
	}
	// Output:
	// a@1 b@2 list at 3
	// c@3 list at 3
}

// A WatchList stream: the state as ADDED events, then the bookmark that
// marks its end, then the changes.
func ExampleResource_WatchWithContext() {
	srv := cachetest.NewServer(cachetest.Options{})
	defer srv.Close()
	cms := srv.Resource(cachetest.Type{Resource: "configmaps", Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}})
	ctx := context.Background()
	_, _ = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "a"}}, metav1.CreateOptions{})
	w, _ := cms.WatchWithContext(ctx, metav1.ListOptions{
		SendInitialEvents:    ptr.To(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks:  true,
	})
	defer w.Stop()
	_, _ = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "b"}}, metav1.CreateOptions{})
	for range 3 {
		ev := <-w.ResultChan()
		c := ev.Object.(*corev1.ConfigMap)
		end := c.Annotations[metav1.InitialEventsAnnotationKey] == "true"
		fmt.Printf("%s %q at %s, end of initial events: %v\n", ev.Type, c.Name, c.ResourceVersion, end)
	}
	// Output:
	// ADDED "a" at 1, end of initial events: false
	// BOOKMARK "" at 1, end of initial events: true
	// ADDED "b" at 2, end of initial events: false
}

// Faults are injected by plain method calls and answered as kube-apiserver
// answers.
func ExampleServer_FailNext() {
	srv := cachetest.NewServer(cachetest.Options{})
	defer srv.Close()
	cms := srv.Resource(cachetest.Type{Resource: "configmaps", Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}})
	srv.FailNext(cachetest.VerbList, 1, cachetest.TooManyRequests(3*time.Second))
	_, err := cms.List(metav1.ListOptions{})
	secs, _ := apierrors.SuggestsClientDelay(err)
	fmt.Println(apierrors.IsTooManyRequests(err), secs)
	_, err = cms.List(metav1.ListOptions{})
	fmt.Println(err)
	// Output:
	// true 3
	// <nil>
}
