package cachetest_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/cachetest"
)

// Each of the four functions of a ListWatch from NewListWatchFromClient
// reaches the server, as those of client-go's do: code that calls ListFunc
// or WatchFunc directly keeps working after the import is switched.
func TestListWatchFromClientEveryFunctionServes(t *testing.T) {
	_, cms, cs := startHTTP(t, cachetest.Options{})
	ctx := bounded(t)
	create(t, cms, "ns/a", "other/b")
	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", "ns", fields.Everything())
	lists := map[string]func(metav1.ListOptions) (*corev1.ConfigMapList, error){
		"ListFunc": func(o metav1.ListOptions) (*corev1.ConfigMapList, error) {
			l, err := lw.ListFunc(o)
			return asCMList(l), err
		},
		"ListWithContextFunc": func(o metav1.ListOptions) (*corev1.ConfigMapList, error) {
			l, err := lw.ListWithContextFunc(ctx, o)
			return asCMList(l), err
		},
	}
	for name, list := range lists {
		l, err := list(metav1.ListOptions{})
		if err != nil || !equal(cmNames(l), []string{"a"}) {
			t.Fatalf("%s: %v, %v; want [a] (namespace ns only)", name, l, err)
		}
	}
	watches := map[string]func(metav1.ListOptions) (watch.Interface, error){
		"WatchFunc":            lw.WatchFunc,
		"WatchFuncWithContext": func(o metav1.ListOptions) (watch.Interface, error) { return lw.WatchFuncWithContext(ctx, o) },
	}
	for name, open := range watches {
		w, err := open(metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := firstEvent(ctx, t, w)
		w.Stop()
		if got.Type != watch.Added || got.Object.(*corev1.ConfigMap).Name != "a" {
			t.Fatalf("%s: first event %v %T, want ADDED a", name, got.Type, got.Object)
		}
	}
}

func asCMList(o interface{}) *corev1.ConfigMapList {
	l, _ := o.(*corev1.ConfigMapList)
	if l == nil {
		return &corev1.ConfigMapList{}
	}
	return l
}

// firstEvent returns w's first event, or fails t when ctx ends first.
func firstEvent(ctx context.Context, t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev := <-w.ResultChan():
		return ev
	case <-ctx.Done():
		t.Fatal("no event before the deadline")
	}
	return watch.Event{}
}
