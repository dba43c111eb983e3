// Package dynamicinformer is a drop-in for client-go's
// dynamic/dynamicinformer whose factory hands out this module's informers
// over unstructured objects (custom resources, any GVR): change the
// import path. Each informer type-asserts to cache.InformerHealthReporter;
// the factory's WaitForSync covers all of them at once.
package dynamicinformer

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	clientgodynamicinformer "k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/internal/informerset"
	"github.com/kreflector/cache/internal/listwatch"
)

// TweakListOptionsFunc changes the options of every LIST and WATCH.
type TweakListOptionsFunc = clientgodynamicinformer.TweakListOptionsFunc

// DynamicSharedInformerFactory is client-go's, with a wait that names the
// informers not synced.
type DynamicSharedInformerFactory interface {
	clientgodynamicinformer.DynamicSharedInformerFactory
	// WaitForSync blocks until every informer requested so far has synced
	// (nil), or ctx ends or each one not synced has stopped; its error
	// then names each GVR not synced, with its informer's WaitForSync
	// error (the last list/watch error; cache.ErrStopped if it stopped)
	// or that it was requested after the last Start.
	WaitForSync(ctx context.Context) error
}

type factory struct {
	client        dynamic.Interface
	defaultResync time.Duration
	namespace     string
	tweak         TweakListOptionsFunc
	newInformer   NewInformerFunc

	informers informerset.Set[schema.GroupVersionResource, informers.GenericInformer]
}

var _ clientgodynamicinformer.DynamicSharedInformerFactory = &factory{}

// NewDynamicSharedInformerFactory returns a factory for all namespaces
// whose informers resync every defaultResync (0: never).
func NewDynamicSharedInformerFactory(client dynamic.Interface, defaultResync time.Duration) DynamicSharedInformerFactory {
	return NewFilteredDynamicSharedInformerFactory(client, defaultResync, metav1.NamespaceAll, nil)
}

// NewFilteredDynamicSharedInformerFactory returns a factory whose
// informers watch namespace only and apply tweak (if not nil) to their
// LIST and WATCH options.
func NewFilteredDynamicSharedInformerFactory(client dynamic.Interface, defaultResync time.Duration, namespace string, tweak TweakListOptionsFunc) DynamicSharedInformerFactory {
	return &factory{
		client:        client,
		defaultResync: defaultResync,
		namespace:     namespace,
		tweak:         tweak,
	}
}

// NewInformerFunc has client-go's NewSharedIndexInformer signature (and
// controller-runtime's cache.Options.NewInformer type), as ring.Ring's
// NewInformer has.
type NewInformerFunc = func(clientgocache.ListerWatcher, runtime.Object, time.Duration, clientgocache.Indexers) clientgocache.SharedIndexInformer

// Option configures NewDynamicSharedInformerFactoryWithOptions (client-go's
// dynamic factory has no options; this package's adds them).
type Option func(*factory)

// WithNamespace limits the factory's informers to namespace.
func WithNamespace(namespace string) Option { return func(f *factory) { f.namespace = namespace } }

// WithTweakListOptions applies tweak to every LIST and WATCH.
func WithTweakListOptions(tweak TweakListOptionsFunc) Option {
	return func(f *factory) { f.tweak = tweak }
}

// WithNewInformer makes newInformer build every informer of the factory
// (given the GVR's ListerWatcher, an *unstructured.Unstructured, the
// resync period and the namespace index) instead of this module's
// constructor: with a ring's NewInformer, every informer of the factory
// is a ring informer. The factory's WaitForSync needs what it builds to
// type-assert to cache.InformerHealthReporter, as ring informers do.
func WithNewInformer(newInformer NewInformerFunc) Option {
	return func(f *factory) { f.newInformer = newInformer }
}

// NewDynamicSharedInformerFactoryWithOptions returns a factory for all
// namespaces whose informers resync every defaultResync (0: never),
// configured by options in order.
func NewDynamicSharedInformerFactoryWithOptions(client dynamic.Interface, defaultResync time.Duration, options ...Option) DynamicSharedInformerFactory {
	f := &factory{client: client, defaultResync: defaultResync, namespace: metav1.NamespaceAll}
	for _, o := range options {
		o(f)
	}
	return f
}

// ForResource returns the informer of gvr, building it on first request
// (with the namespace index, as client-go's does).
func (f *factory) ForResource(gvr schema.GroupVersionResource) informers.GenericInformer {
	return f.informers.GetOrAdd(gvr, func() informers.GenericInformer {
		indexers := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
		if f.newInformer != nil {
			lw := listwatch.New(f.client.Resource(gvr).Namespace(f.namespace), f.tweak)
			inf := f.newInformer(clientgocache.ToListWatcherWithWatchListSemantics(lw, f.client), &unstructured.Unstructured{}, f.defaultResync, indexers)
			return &dynamicInformer{informer: inf, gvr: gvr}
		}
		return NewFilteredDynamicInformer(f.client, gvr, f.namespace, f.defaultResync, indexers, f.tweak)
	})
}

// Start runs, each in a goroutine until stopCh closes, the informers
// requested since the last Start; it does nothing once Shutdown is called.
func (f *factory) Start(stopCh <-chan struct{}) {
	f.informers.Start(func(inf informers.GenericInformer) { inf.Informer().Run(stopCh) })
}

// Shutdown stops Start from starting informers and waits until every
// informer started has returned (close Start's channel first or meanwhile).
func (f *factory) Shutdown() { f.informers.Shutdown() }

// WaitForCacheSync waits until every started informer has synced or
// stopCh closes, and reports each one's HasSynced.
func (f *factory) WaitForCacheSync(stopCh <-chan struct{}) map[schema.GroupVersionResource]bool {
	started, _ := f.informers.Snapshot()
	res := make(map[schema.GroupVersionResource]bool, len(started))
	for gvr, inf := range started {
		res[gvr] = clientgocache.WaitForCacheSync(stopCh, inf.Informer().HasSynced)
	}
	return res
}

// WaitForSync: see DynamicSharedInformerFactory.
func (f *factory) WaitForSync(ctx context.Context) error {
	return f.informers.WaitForSync(ctx, cache.ErrNotSynced, func(ctx context.Context, inf informers.GenericInformer) error {
		return inf.Informer().(cache.InformerHealthReporter).WaitForSync(ctx)
	})
}
