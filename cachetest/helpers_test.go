package cachetest_test

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kreflector/cache/cachetest"
)

var configMaps = cachetest.Type{Resource: "configmaps", Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}}

// newServer returns a server serving ConfigMaps, closed when t ends.
func newServer(t *testing.T, opts cachetest.Options) (*cachetest.Server, *cachetest.Resource) {
	t.Helper()
	srv := cachetest.NewServer(opts)
	t.Cleanup(srv.Close)
	return srv, srv.Resource(configMaps)
}

func cm(ns, name string, labels ...string) *corev1.ConfigMap {
	c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	for i := 0; i+1 < len(labels); i += 2 {
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels[labels[i]] = labels[i+1]
	}
	return c
}

// create creates ConfigMaps "ns/name" (labels none) and fails t on error.
func create(t *testing.T, r *cachetest.Resource, keys ...string) {
	t.Helper()
	for _, k := range keys {
		ns, name, _ := strings.Cut(k, "/")
		if _, err := r.Create(t.Context(), cm(ns, name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// update changes data of ns/name and fails t on error.
func update(t *testing.T, r *cachetest.Resource, key string) {
	t.Helper()
	ns, name, _ := strings.Cut(key, "/")
	obj, err := r.Get(t.Context(), ns, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := obj.(*corev1.ConfigMap)
	c.Data = map[string]string{"n": fmt.Sprint(len(c.Data["n"]) + 1)}
	if _, err := r.Update(t.Context(), c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func remove(t *testing.T, r *cachetest.Resource, key string) {
	t.Helper()
	ns, name, _ := strings.Cut(key, "/")
	if _, err := r.Delete(t.Context(), ns, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// id renders an object as "ns/name@rv".
func id(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Sprintf("<%T>", obj)
	}
	key := m.GetName()
	if m.GetNamespace() != "" {
		key = m.GetNamespace() + "/" + key
	}
	return key + "@" + m.GetResourceVersion()
}

// ids renders a list's items.
func ids(t *testing.T, list runtime.Object) []string {
	t.Helper()
	items, err := meta.ExtractList(list)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, o := range items {
		out = append(out, id(o))
	}
	return out
}

// describeEvent renders an event as "ADDED ns/a@3", "BOOKMARK @5",
// "BOOKMARK @5 end" or "ERROR 410 Expired: message".
func describeEvent(ev watch.Event) string {
	switch ev.Type {
	case watch.Error:
		s, ok := ev.Object.(*metav1.Status)
		if !ok {
			return fmt.Sprintf("ERROR %T", ev.Object)
		}
		return fmt.Sprintf("ERROR %d %s: %s", s.Code, s.Reason, s.Message)
	case watch.Bookmark:
		m, _ := meta.Accessor(ev.Object)
		s := "BOOKMARK " + id(ev.Object)
		if m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
			s += " end"
		}
		return s
	}
	return string(ev.Type) + " " + id(ev.Object)
}

// drain returns the events the watch has ready once every goroutine of
// the bubble is blocked, and whether the watch is still open. It must run
// inside synctest.Test.
func drain(w watch.Interface) ([]string, bool) {
	var out []string
	for {
		synctest.Wait()
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return out, false
			}
			out = append(out, describeEvent(ev))
		default:
			return out, true
		}
	}
}

// expectEvents drains w and compares with want.
func expectEvents(t *testing.T, w watch.Interface, want ...string) {
	t.Helper()
	got, _ := drain(w)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// expectClosed drains w and fails unless it is closed.
func expectClosed(t *testing.T, w watch.Interface) {
	t.Helper()
	if got, open := drain(w); open || len(got) > 0 {
		t.Fatalf("watch open=%v with events %q, want closed", open, got)
	}
}

func equal(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }
