package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// TestColdServer checks the cold-start benchmark's files and server
// through a real clientset, in both encodings: the pages of a LIST, the
// LIST answered whole, and the WatchList stream decode to the Pods they
// were made from, and the server counts what it served.
func TestColdServer(t *testing.T) {
	const n = 700 // two pages, the last one short
	dir := t.TempDir()
	encs := []string{"json", "protobuf"}
	for _, enc := range encs {
		if err := writeColdFiles(dir, n, enc); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := startColdServer(dir, n, encs)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.close()
	for _, enc := range encs {
		for _, gz := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/gzip=%v", enc, gz), func(t *testing.T) {
				srv.setGzip(gz)
				defer srv.setGzip(false)
				checkColdServes(t, srv, enc, n, gz)
			})
		}
	}
}

// checkColdServes reads every form the server serves in enc (compressed
// if gz) through a clientset and checks what it counted.
func checkColdServes(t *testing.T, srv *coldServer, enc string, n int, gz bool) {
	cs, err := coldClientset(srv.url, enc)
	if err != nil {
		t.Fatal(err)
	}
	before, err := fetchColdStats(srv.url)
	if err != nil {
		t.Fatal(err)
	}
	checkColdPaged(t, srv, cs, n)
	checkColdWhole(t, srv, cs, n)
	checkColdStream(t, cs, n)
	after, err := fetchColdStats(srv.url)
	if err != nil {
		t.Fatal(err)
	}
	want := coldStats{Pages: 2, Whole: 1, WatchLists: 1}
	if enc == "protobuf" {
		want.Protobuf = 4
	}
	if gz { // every body is over 128 KiB
		want.Gzipped = 4
	}
	got := after.minus(before)
	got.Bytes = 0
	if got != want {
		t.Errorf("served %+v, want %+v", got, want)
	}
}

// checkColdPaged follows a paginated LIST at RV "0" to its end.
func checkColdPaged(t *testing.T, srv *coldServer, cs kubernetes.Interface, n int) {
	srv.setMode("paged")
	opts := metav1.ListOptions{ResourceVersion: "0", Limit: coldPageSize}
	var pods []corev1.Pod
	for page := 0; ; page++ {
		l, err := cs.CoreV1().Pods("").List(t.Context(), opts)
		if err != nil {
			t.Fatal(err)
		}
		pods = append(pods, l.Items...)
		if l.Continue == "" {
			break
		}
		if left := n - len(pods); l.RemainingItemCount == nil || *l.RemainingItemCount != int64(left) {
			t.Errorf("page %d: remaining %v, want %d", page, l.RemainingItemCount, left)
		}
		opts = metav1.ListOptions{Limit: coldPageSize, Continue: l.Continue}
	}
	checkColdPods(t, "paginated LIST", pods, n)
}

// checkColdWhole LISTs at RV "0" with a limit, in mode "whole".
func checkColdWhole(t *testing.T, srv *coldServer, cs kubernetes.Interface, n int) {
	srv.setMode("whole")
	defer srv.setMode("paged")
	l, err := cs.CoreV1().Pods("").List(t.Context(), metav1.ListOptions{ResourceVersion: "0", Limit: coldPageSize})
	if err != nil {
		t.Fatal(err)
	}
	if l.Continue != "" || l.ResourceVersion != "1700" {
		t.Errorf("whole LIST: continue %q, resourceVersion %q", l.Continue, l.ResourceVersion)
	}
	checkColdPods(t, "whole LIST", l.Items, n)
}

// checkColdStream reads a WatchList stream to its bookmark.
func checkColdStream(t *testing.T, cs kubernetes.Interface, n int) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	w, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{SendInitialEvents: ptr.To(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var pods []corev1.Pod
	for ev := range w.ResultChan() {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			t.Fatalf("event %s of %T", ev.Type, ev.Object)
		}
		if ev.Type == watch.Bookmark {
			if p.Annotations[metav1.InitialEventsAnnotationKey] != "true" || p.ResourceVersion != "1700" {
				t.Errorf("bookmark %+v", p.ObjectMeta)
			}
			checkColdPods(t, "WatchList", pods, n)
			return
		}
		if ev.Type != watch.Added {
			t.Fatalf("event %s", ev.Type)
		}
		pods = append(pods, *p)
	}
	t.Fatal("the stream ended before its bookmark")
}

// checkColdPods checks that pods are the n Pods the files were made of.
func checkColdPods(t *testing.T, what string, pods []corev1.Pod, n int) {
	t.Helper()
	if len(pods) != n {
		t.Fatalf("%s: %d Pods, want %d", what, len(pods), n)
	}
	for i := range pods {
		want := coldPod(i, n)
		got := &pods[i]
		got.TypeMeta, want.TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
		if !apiequality.Semantic.DeepEqual(got, want) {
			t.Fatalf("%s: Pod %d differs:\ngot  %+v\nwant %+v", what, i, got.ObjectMeta, want.ObjectMeta)
		}
	}
}
