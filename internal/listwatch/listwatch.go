// Package listwatch builds the ListWatch of one resource client, typed or
// dynamic, the way client-go's generated and dynamic informers build theirs.
// The factories (informers, dynamicinformer) share it.
package listwatch

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgocache "k8s.io/client-go/tools/cache"
)

// Client is what a resource client offers for listing and watching
// objects whose list type is L: a typed clientset's resource client, or a
// dynamic client's (L is then *unstructured.UnstructuredList).
type Client[L runtime.Object] interface {
	List(context.Context, metav1.ListOptions) (L, error)
	Watch(context.Context, metav1.ListOptions) (watch.Interface, error)
}

// New returns a ListWatch over c with all four functions set, so callers
// that call ListFunc or WatchFunc directly keep working; tweak, if not
// nil, is applied to the options of every LIST and WATCH. The context-free
// functions use context.Background().
func New[L runtime.Object](c Client[L], tweak func(*metav1.ListOptions)) *clientgocache.ListWatch {
	apply := func(opts *metav1.ListOptions) {
		if tweak != nil {
			tweak(opts)
		}
	}
	list := func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		apply(&opts)
		return c.List(ctx, opts)
	}
	watchFn := func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		apply(&opts)
		return c.Watch(ctx, opts)
	}
	return &clientgocache.ListWatch{
		ListFunc:             func(opts metav1.ListOptions) (runtime.Object, error) { return list(context.Background(), opts) },
		WatchFunc:            func(opts metav1.ListOptions) (watch.Interface, error) { return watchFn(context.Background(), opts) },
		ListWithContextFunc:  list,
		WatchFuncWithContext: watchFn,
	}
}
