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
	// (nil), or ctx ends or each one not synced has stopped; its error
	// then names each GVR not synced, with its informer's WaitForSync
	// error (the last list/watch error; cache.ErrStopped if it stopped)
	// or that it was requested after the last Start.
	WaitForSync(ctx context.Context) error
}

// factory builds GVRs' informers; informerset.GVRFactory gives it
// ForResource, Start, StartWithContext, Shutdown and the waits.
type factory struct {
	*informerset.GVRFactory
	client        dynamic.Interface
	defaultResync time.Duration
	namespace     string
	tweak         TweakListOptionsFunc
	newInformer   NewInformerFunc
}

var _ clientgodynamicinformer.DynamicSharedInformerFactory = &factory{}

// newFactory returns a factory for all namespaces, configured by options
// in order.
func newFactory(client dynamic.Interface, defaultResync time.Duration, options ...Option) *factory {
	f := &factory{client: client, defaultResync: defaultResync, namespace: metav1.NamespaceAll}
	f.GVRFactory = informerset.NewGVRFactory(f.build)
	for _, o := range options {
		o(f)
	}
	return f
}

// NewDynamicSharedInformerFactory returns a factory for all namespaces
// whose informers resync every defaultResync (0: never).
func NewDynamicSharedInformerFactory(client dynamic.Interface, defaultResync time.Duration) DynamicSharedInformerFactory {
	return NewFilteredDynamicSharedInformerFactory(client, defaultResync, metav1.NamespaceAll, nil)
}

// NewFilteredDynamicSharedInformerFactory returns a factory whose
// informers watch namespace only and apply tweak (if not nil) to their
// LIST and WATCH options.
func NewFilteredDynamicSharedInformerFactory(client dynamic.Interface, defaultResync time.Duration, namespace string, tweak TweakListOptionsFunc) DynamicSharedInformerFactory {
	return newFactory(client, defaultResync, WithNamespace(namespace), WithTweakListOptions(tweak))
}

// NewInformerFunc has client-go's NewSharedIndexInformer signature (and
// controller-runtime's cache.Options.NewInformer type), as ring.Ring's
// NewInformer has.
type NewInformerFunc = informerset.NewInformerFunc

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
// is a ring informer. The factory's WaitForSync uses the WaitForSync of
// what it builds when that type-asserts to cache.InformerHealthReporter
// (ring informers do), else waits for its HasSynced until ctx ends.
func WithNewInformer(newInformer NewInformerFunc) Option {
	return func(f *factory) { f.newInformer = newInformer }
}

// NewDynamicSharedInformerFactoryWithOptions returns a factory for all
// namespaces whose informers resync every defaultResync (0: never),
// configured by options in order.
func NewDynamicSharedInformerFactoryWithOptions(client dynamic.Interface, defaultResync time.Duration, options ...Option) DynamicSharedInformerFactory {
	return newFactory(client, defaultResync, options...)
}

// build builds gvr's informer (with the namespace index, as client-go's
// does), on ForResource's first request for it.
func (f *factory) build(gvr schema.GroupVersionResource) informers.GenericInformer {
	return newInformer(f.client, gvr, f.namespace, f.defaultResync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, f.tweak, f.newInformer)
}
