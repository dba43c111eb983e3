package cachetest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/cachetest"
)

func withRV(c *corev1.ConfigMap, rv string) *corev1.ConfigMap {
	c.ResourceVersion = rv
	return c
}

func TestRecordingStoreRecordsCallsAndContents(t *testing.T) {
	s := cachetest.NewRecordingStore(nil)
	steps := []error{
		s.Replace([]interface{}{withRV(cm("ns", "b"), "2"), withRV(cm("ns", "a"), "1")}, "2"),
		s.Add(withRV(cm("ns", "c"), "3")),
		s.Update(withRV(cm("ns", "a"), "4")),
		s.Delete(withRV(cm("ns", "b"), "5")),
		s.Bookmark("6"),
		s.Resync(),
	}
	s.UpdateResourceVersion("7")
	for i, err := range steps {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	var got []string
	for _, c := range s.Calls() {
		got = append(got, c.String())
	}
	want := []string{"Replace rv=2 [ns/a@1 ns/b@2]", "Add ns/c@3", "Update ns/a@4", "Delete ns/b@5", "Bookmark rv=6", "Resync", "UpdateResourceVersion rv=7"}
	if !equal(got, want) {
		t.Fatalf("calls\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if keys := s.ListKeys(); !equal(keys, []string{"ns/a", "ns/c"}) || s.LastStoreSyncResourceVersion() != "7" {
		t.Fatalf("keys %v at %s", keys, s.LastStoreSyncResourceVersion())
	}
	if o, ok, _ := s.GetByKey("ns/a"); !ok || o.(*corev1.ConfigMap).ResourceVersion != "4" {
		t.Fatalf("ns/a is %v", o)
	}
	if _, ok, _ := s.Get(cm("ns", "b")); ok {
		t.Fatal("ns/b was deleted")
	}
}

func TestRecordingStoreReportsKeyErrorsAfterRecording(t *testing.T) {
	s := cachetest.NewRecordingStore(nil)
	var nilCM *corev1.ConfigMap
	for _, obj := range []interface{}{nil, nilCM, "not an object"} {
		var ke cache.KeyError
		if err := s.Add(obj); !errors.As(err, &ke) {
			t.Errorf("Add(%T): %v, want a KeyError", obj, err)
		}
	}
	if err := s.Replace([]interface{}{cm("ns", "a"), 42}, "1"); err == nil {
		t.Error("Replace with an unkeyable item must fail")
	}
	if n := len(s.Calls()); n != 4 || len(s.List()) != 0 {
		t.Fatalf("%d calls, %d items", n, len(s.List()))
	}
}

func TestRecordingStoreWaitFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := cachetest.NewRecordingStore(nil)
		go func() {
			time.Sleep(time.Second)
			_ = s.Add(cm("ns", "a"))
			time.Sleep(time.Second)
			_ = s.Add(cm("ns", "b"))
		}()
		start := time.Now()
		if err := s.WaitFor(t.Context(), func() bool { return len(s.ListKeys()) == 2 }); err != nil {
			t.Fatal(err)
		}
		if time.Since(start) != 2*time.Second {
			t.Fatalf("waited %v", time.Since(start))
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		if err := s.WaitFor(ctx, func() bool { return false }); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestCompare(t *testing.T) {
	server := []runtime.Object{withRV(cm("ns", "a"), "1"), withRV(cm("ns", "b"), "2"), withRV(cm("ns", "c"), "3")}
	store := []interface{}{withRV(cm("ns", "a"), "1"), withRV(cm("ns", "b"), "1"), withRV(cm("ns", "z"), "9")}
	d := cachetest.Compare(server, store)
	if d.Empty() || !equal(d.Lost, []string{"ns/c@3"}) || !equal(d.Phantom, []string{"ns/z@9"}) || !equal(d.Stale, []string{"ns/b@1, server has 2"}) {
		t.Fatalf("got %v", d)
	}
	if d := cachetest.Compare(server, []interface{}{server[0], server[1], server[2]}); !d.Empty() {
		t.Fatalf("identical contents: %v", d)
	}
}

func TestServerRunsOnAFakeClock(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv := cachetest.NewServer(cachetest.Options{Clock: clk})
	defer srv.Close()
	cms := srv.Resource(configMaps)
	w, err := cms.Watch(metav1.ListOptions{AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	create(t, cms, "ns/a")
	// The watch had no initial events, so it armed its bookmark ticker
	// before it could deliver this one.
	if got := describeEvent(<-w.ResultChan()); got != "ADDED ns/a@1" {
		t.Fatal(got)
	}
	clk.Step(time.Minute)
	if got := describeEvent(<-w.ResultChan()); got != "BOOKMARK @1" {
		t.Fatal(got)
	}
}

func TestRecordingStoreCallStrings(t *testing.T) {
	s := cachetest.NewRecordingStore(nil)
	_ = s.Replace([]interface{}{withRV(cm("ns", "b"), "2"), withRV(cm("ns", "a"), "1")}, "2")
	_ = s.Delete(withRV(cm("ns", "a"), "3"))
	_ = s.Resync()
	s.UpdateResourceVersion("3")
	want := []string{"Replace rv=2 [ns/a@1 ns/b@2]", "Delete ns/a@3", "Resync", "UpdateResourceVersion rv=3"}
	if got := s.CallStrings(); !equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for i, c := range s.Calls() {
		if c.String() != want[i] {
			t.Fatalf("call %d: %q is not its String %q", i, want[i], c.String())
		}
	}
}

func TestRecordingStoreFailOn(t *testing.T) {
	s := cachetest.NewRecordingStore(nil)
	boom := errors.New("boom")
	if err := s.Replace([]interface{}{withRV(cm("ns", "a"), "1")}, "1"); err != nil {
		t.Fatal(err)
	}
	for _, op := range []cachetest.StoreOp{cachetest.OpAdd, cachetest.OpUpdate, cachetest.OpDelete, cachetest.OpReplace, cachetest.OpResync, cachetest.OpBookmark, cachetest.OpUpdateResourceVersion} {
		s.FailOn(op, boom)
	}
	a2 := withRV(cm("ns", "a"), "2")
	for name, err := range map[string]error{
		"Add": s.Add(withRV(cm("ns", "b"), "2")), "Update": s.Update(a2), "Delete": s.Delete(a2),
		"Replace": s.Replace(nil, "3"), "Resync": s.Resync(), "Bookmark": s.Bookmark("4"),
	} {
		if !errors.Is(err, boom) {
			t.Errorf("%s: %v, want the injected error", name, err)
		}
	}
	s.UpdateResourceVersion("5")
	if n := len(s.Calls()); n != 8 {
		t.Fatalf("%d calls recorded, want every failed one too (8)", n)
	}
	if o, _, _ := s.GetByKey("ns/a"); len(s.ListKeys()) != 1 || o.(*corev1.ConfigMap).ResourceVersion != "1" || s.LastStoreSyncResourceVersion() != "1" {
		t.Fatalf("failed calls changed the contents: %v at %s", s.ListKeys(), s.LastStoreSyncResourceVersion())
	}
	s.FailOn(cachetest.OpAdd, nil)
	if err := s.Add(withRV(cm("ns", "b"), "6")); err != nil || len(s.ListKeys()) != 2 {
		t.Fatalf("Add after FailOn(nil): %v, keys %v", err, s.ListKeys())
	}
}
