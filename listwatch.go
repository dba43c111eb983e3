package cache

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	restclient "k8s.io/client-go/rest"
)

// Lister lists a resource. The returned object must be a list type
// (meta.ListAccessor must accept it) carrying a resourceVersion.
type Lister interface {
	List(options metav1.ListOptions) (runtime.Object, error)
}

// ListerWithContext is Lister with a context. The call must return promptly
// once ctx is cancelled.
type ListerWithContext interface {
	ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error)
}

// Watcher opens a watch on a resource.
type Watcher interface {
	Watch(options metav1.ListOptions) (watch.Interface, error)
}

// WatcherWithContext is Watcher with a context. The returned watch.Interface
// belongs to the caller, who must call Stop on it; cancelling ctx also ends it.
type WatcherWithContext interface {
	WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error)
}

// ListerWatcher is what a Reflector reads from. Its method set is the same
// as client-go's cache.ListerWatcher, so values of either satisfy both.
type ListerWatcher interface {
	Lister
	Watcher
}

// ListerWatcherWithContext is the context-aware form of ListerWatcher. The
// Reflector always calls the context-aware methods.
type ListerWatcherWithContext interface {
	ListerWithContext
	WatcherWithContext
}

// ToListerWithContext returns l itself when it already takes a context, and
// otherwise an adapter that ignores the context (the call cannot be cancelled).
func ToListerWithContext(l Lister) ListerWithContext {
	if lc, ok := l.(ListerWithContext); ok {
		return lc
	}
	return contextFreeLister{l}
}

// ToWatcherWithContext returns w itself when it already takes a context, and
// otherwise an adapter that ignores the context.
func ToWatcherWithContext(w Watcher) WatcherWithContext {
	if wc, ok := w.(WatcherWithContext); ok {
		return wc
	}
	return contextFreeWatcher{w}
}

// ToListerWatcherWithContext returns lw itself when it implements
// ListerWatcherWithContext, and otherwise adapters that drop the context.
// The result keeps reporting IsWatchListSemanticsUnSupported when lw does.
func ToListerWatcherWithContext(lw ListerWatcher) ListerWatcherWithContext {
	if lwc, ok := lw.(ListerWatcherWithContext); ok {
		return lwc
	}
	return contextFreeListerWatcher{
		ListerWithContext:  ToListerWithContext(lw),
		WatcherWithContext: ToWatcherWithContext(lw),
		watchListRefused:   watchListUnsupported(lw),
	}
}

type contextFreeLister struct{ l Lister }

func (a contextFreeLister) ListWithContext(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
	return a.l.List(o)
}

type contextFreeWatcher struct{ w Watcher }

func (a contextFreeWatcher) WatchWithContext(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return a.w.Watch(o)
}

type contextFreeListerWatcher struct {
	ListerWithContext
	WatcherWithContext
	watchListRefused bool
}

func (a contextFreeListerWatcher) IsWatchListSemanticsUnSupported() bool { return a.watchListRefused }

// watchListUnsupported reports whether v declares, through the optional
// IsWatchListSemanticsUnSupported method (as client-go's fake clientsets do),
// that it cannot serve WatchList streams.
func watchListUnsupported(v any) bool {
	d, ok := v.(interface{ IsWatchListSemanticsUnSupported() bool })
	return ok && d.IsWatchListSemanticsUnSupported()
}

// ListFunc lists a resource.
type ListFunc func(options metav1.ListOptions) (runtime.Object, error)

// ListWithContextFunc lists a resource with a context.
type ListWithContextFunc func(ctx context.Context, options metav1.ListOptions) (runtime.Object, error)

// WatchFunc opens a watch.
type WatchFunc func(options metav1.ListOptions) (watch.Interface, error)

// WatchFuncWithContext opens a watch with a context.
type WatchFuncWithContext func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error)

// ListWatch builds a ListerWatcher from functions. Set at least one list and
// one watch function; the context-aware one is preferred by the context-aware
// methods and the plain one by the plain methods, each falling back to the
// other.
type ListWatch struct {
	ListFunc             ListFunc
	WatchFunc            WatchFunc
	ListWithContextFunc  ListWithContextFunc
	WatchFuncWithContext WatchFuncWithContext
	// DisableChunking is kept for source compatibility with client-go; the
	// Reflector does not read it.
	DisableChunking bool
}

var (
	_ ListerWatcher            = &ListWatch{}
	_ ListerWatcherWithContext = &ListWatch{}
)

// List calls ListFunc, or ListWithContextFunc with context.Background().
func (lw *ListWatch) List(options metav1.ListOptions) (runtime.Object, error) {
	if lw.ListFunc != nil {
		return lw.ListFunc(options)
	}
	return lw.ListWithContextFunc(context.Background(), options)
}

// ListWithContext calls ListWithContextFunc, or ListFunc without the context.
func (lw *ListWatch) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	if lw.ListWithContextFunc != nil {
		return lw.ListWithContextFunc(ctx, options)
	}
	return lw.ListFunc(options)
}

// Watch calls WatchFunc, or WatchFuncWithContext with context.Background().
func (lw *ListWatch) Watch(options metav1.ListOptions) (watch.Interface, error) {
	if lw.WatchFunc != nil {
		return lw.WatchFunc(options)
	}
	return lw.WatchFuncWithContext(context.Background(), options)
}

// WatchWithContext calls WatchFuncWithContext, or WatchFunc without the context.
func (lw *ListWatch) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	if lw.WatchFuncWithContext != nil {
		return lw.WatchFuncWithContext(ctx, options)
	}
	return lw.WatchFunc(options)
}

// Getter is satisfied by client-go REST clients (for example
// clientset.CoreV1().RESTClient()).
type Getter interface {
	Get() *restclient.Request
}

// NewListWatchFromClient returns a ListWatch for resource in namespace
// (metav1.NamespaceAll for every namespace) restricted by fieldSelector.
func NewListWatchFromClient(c Getter, resource string, namespace string, fieldSelector fields.Selector) *ListWatch {
	selector := fieldSelector.String()
	return NewFilteredListWatchFromClient(c, resource, namespace, func(o *metav1.ListOptions) {
		o.FieldSelector = selector
	})
}

// NewFilteredListWatchFromClient returns a ListWatch for resource in
// namespace; optionsModifier may add selectors to every request. Each
// request carries the caller's context, so cancelling it aborts the call.
func NewFilteredListWatchFromClient(c Getter, resource string, namespace string, optionsModifier func(options *metav1.ListOptions)) *ListWatch {
	request := func(options metav1.ListOptions, watching bool) *restclient.Request {
		options.Watch = watching
		if optionsModifier != nil {
			optionsModifier(&options)
		}
		return c.Get().Namespace(namespace).Resource(resource).VersionedParams(&options, metav1.ParameterCodec)
	}
	return &ListWatch{
		ListWithContextFunc: func(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
			return request(options, false).Do(ctx).Get()
		},
		WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
			return request(options, true).Watch(ctx)
		},
	}
}
