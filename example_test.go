package cache_test

import (
	"context"
	"fmt"
	"runtime"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache"
)

// A Reflector fills a store from a ListerWatcher and keeps it up to date.
// Here the ListerWatcher is a ListWatch over fixed answers; in a program it
// would be cache.NewListWatchFromClient(clientset.CoreV1().RESTClient(), ...).
func ExampleNewReflectorWithOptions() {
	events := make(chan watch.Event, 1)
	events <- watch.Event{Type: watch.Added, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "b", ResourceVersion: "8"}}}
	lw := &cache.ListWatch{
		ListFunc: func(metav1.ListOptions) (kruntime.Object, error) {
			return &corev1.ConfigMapList{
				ListMeta: metav1.ListMeta{ResourceVersion: "7"},
				Items:    []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a", ResourceVersion: "7"}}},
			}, nil
		},
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) {
			return watch.NewProxyWatcher(events), nil
		},
	}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	r := cache.NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, cache.ReflectorOptions{
		Name:         "example",
		UseWatchList: ptr.To(false), // these fixed answers cannot stream a WatchList
		OnHealthChange: func(h cache.Health) {
			fmt.Println("health:", h.State)
		},
	})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.RunWithContext(ctx); close(done) }()
	if err := r.WaitForSync(ctx); err != nil {
		fmt.Println("not synced:", err)
	}
	for len(store.ListKeys()) < 2 { // wait for the watched ConfigMap
		runtime.Gosched()
	}
	cancel()
	<-done
	keys := store.ListKeys()
	sort.Strings(keys)
	fmt.Println(keys)
	// Output:
	// health: Synced
	// health: Stopped
	// [default/a default/b]
}
