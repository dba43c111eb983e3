package cache

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	restclient "k8s.io/client-go/rest"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache/internal/listwatch"
)

// Lister lists a resource. The returned object must be a list type
// (meta.ListAccessor must accept it) carrying a resourceVersion. It is
// client-go's interface, as are the five below, so a ListerWatcher written
// for either package serves both.
type Lister = clientgocache.Lister

// ListerWithContext is Lister with a context. The call must return promptly
// once ctx is cancelled.
type ListerWithContext = clientgocache.ListerWithContext

// Watcher opens a watch on a resource.
type Watcher = clientgocache.Watcher

// WatcherWithContext is Watcher with a context. The returned watch.Interface
// belongs to the caller, who must call Stop on it; cancelling ctx also ends it.
type WatcherWithContext = clientgocache.WatcherWithContext

// ListerWatcher is what a Reflector reads from.
type ListerWatcher = clientgocache.ListerWatcher

// ListerWatcherWithContext is the context-aware form of ListerWatcher. The
// Reflector always calls the context-aware methods.
type ListerWatcherWithContext = clientgocache.ListerWatcherWithContext

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

// ListFunc lists a resource. It is client-go's type, as are the three
// below.
type ListFunc = clientgocache.ListFunc

// ListWithContextFunc lists a resource with a context.
type ListWithContextFunc = clientgocache.ListWithContextFunc

// WatchFunc opens a watch.
type WatchFunc = clientgocache.WatchFunc

// WatchFuncWithContext opens a watch with a context.
type WatchFuncWithContext = clientgocache.WatchFuncWithContext

// ListWatch builds a ListerWatcher from functions. It is client-go's type:
// set at least one list and one watch function; the context-aware one is
// preferred by the context-aware methods and the plain one by the plain
// methods, each falling back to the other. The Reflector does not read
// DisableChunking.
type ListWatch = clientgocache.ListWatch

// Getter is satisfied by client-go REST clients (for example
// clientset.CoreV1().RESTClient()). It is client-go's interface.
type Getter = clientgocache.Getter

// NewListWatchFromClient returns a ListWatch for resource in namespace
// (metav1.NamespaceAll for every namespace) restricted by fieldSelector.
// It panics if c is nil, as the RESTClient of a client-go fake clientset
// is: build a fake's ListWatch from its typed client instead (see
// ToListWatcherWithWatchListSemantics).
func NewListWatchFromClient(c Getter, resource string, namespace string, fieldSelector fields.Selector) *ListWatch {
	selector := fieldSelector.String()
	return NewFilteredListWatchFromClient(c, resource, namespace, func(o *metav1.ListOptions) {
		o.FieldSelector = selector
	})
}

// NewFilteredListWatchFromClient returns a ListWatch for resource in
// namespace; optionsModifier, if not nil, may add selectors to every
// request. When c is a REST client of one of client-go's built-in group
// versions (clientset.CoreV1().RESTClient(), say) and resource one of its
// kinds, the LIST streams its response into a decoder that decodes the
// items on GOMAXPROCS goroutines, in order, into the objects client-go's
// decoder makes (the list's own kind and apiVersion cleared, as a
// clientset's client clears them), and under a Reflector requests the
// next page while the current one is decoded; any other client decodes
// as client-go does. All four functions are set, as client-go sets them, so callers
// that call ListFunc or WatchFunc directly keep working; the context-aware
// ones carry the caller's context, so cancelling it aborts the call. It
// panics if c is nil, as the RESTClient of a client-go fake clientset is
// (client-go's would panic at the first LIST, inside the Reflector).
func NewFilteredListWatchFromClient(c Getter, resource string, namespace string, optionsModifier func(options *metav1.ListOptions)) *ListWatch {
	if isNil(c) {
		panic(fmt.Sprintf("cache.NewFilteredListWatchFromClient(%q): the REST client is nil, as a fake clientset's is; "+
			"build the ListWatch from the typed client's List and Watch and wrap it with "+
			"cache.ToListWatcherWithWatchListSemantics(lw, clientset)", resource))
	}
	if rc, ok := c.(restclient.Interface); ok {
		build := func(options metav1.ListOptions) *restclient.Request {
			return c.Get().Namespace(namespace).Resource(resource).VersionedParams(&options, metav1.ParameterCodec)
		}
		if lw, ok := listwatch.FromRESTClient(rc, resource, build, optionsModifier); ok {
			return lw
		}
	}
	request := func(options metav1.ListOptions, watching bool) *restclient.Request {
		options.Watch = watching
		if optionsModifier != nil {
			optionsModifier(&options)
		}
		return c.Get().Namespace(namespace).Resource(resource).VersionedParams(&options, metav1.ParameterCodec)
	}
	listCtx := func(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
		return request(options, false).Do(ctx).Get()
	}
	watchCtx := func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
		return request(options, true).Watch(ctx)
	}
	return &ListWatch{
		ListFunc: func(options metav1.ListOptions) (runtime.Object, error) {
			return listCtx(context.Background(), options)
		},
		WatchFunc: func(options metav1.ListOptions) (watch.Interface, error) {
			return watchCtx(context.Background(), options)
		},
		ListWithContextFunc:  listCtx,
		WatchFuncWithContext: watchCtx,
	}
}

// ToListWatcherWithWatchListSemantics is client-go's function of that name:
// lw, reporting IsWatchListSemanticsUnSupported when client does (client-go's
// fake clientsets do), so that a Reflector LISTs and WATCHes instead of
// asking for a WatchList stream whose initial-events-end bookmark a fake
// never sends. client-go's generated informers wrap every ListWatch this
// way; do the same for a ListWatch over a fake clientset's typed client.
func ToListWatcherWithWatchListSemantics(lw *ListWatch, client any) ListerWatcher {
	return clientgocache.ToListWatcherWithWatchListSemantics(lw, client)
}
