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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	clientgodynamicinformer "k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/internal/informerset"
)

// TweakListOptionsFunc changes the options of every LIST and WATCH.
type TweakListOptionsFunc = clientgodynamicinformer.TweakListOptionsFunc

// DynamicSharedInformerFactory is client-go's, with a wait that names the
// informers not synced.
type DynamicSharedInformerFactory interface {
	clientgodynamicinformer.DynamicSharedInformerFactory
	// WaitForSync blocks until every informer requested so far has synced
	// (nil) or ctx ends; its error then names each GVR not synced, with
	// its informer's WaitForSync error (the last list/watch error) or
	// that it was requested after the last Start.
	WaitForSync(ctx context.Context) error
}

type factory struct {
	client        dynamic.Interface
	defaultResync time.Duration
	namespace     string
	tweak         TweakListOptionsFunc

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

// ForResource returns the informer of gvr, building it on first request
// (with the namespace index, as client-go's does).
func (f *factory) ForResource(gvr schema.GroupVersionResource) informers.GenericInformer {
	return f.informers.GetOrAdd(gvr, func() informers.GenericInformer {
		return NewFilteredDynamicInformer(f.client, gvr, f.namespace, f.defaultResync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, f.tweak)
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
