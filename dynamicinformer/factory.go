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
	"k8s.io/client-go/dynamic"
	clientgodynamicinformer "k8s.io/client-go/dynamic/dynamicinformer"

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

// factory is informerset's GVR factory of unstructured objects; its
// options set the GVRConfig.
type factory struct {
	*informerset.GVRFactory[dynamic.Interface, *unstructured.UnstructuredList]
}

var _ clientgodynamicinformer.DynamicSharedInformerFactory = &factory{}

// newFactory returns a factory for all namespaces, configured by options
// in order.
func newFactory(client dynamic.Interface, defaultResync time.Duration, options ...Option) *factory {
	f := &factory{informerset.NewGVRFactory(client, unstructuredKind, defaultResync)}
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
func WithNamespace(namespace string) Option { return func(f *factory) { f.Namespace = namespace } }

// WithTweakListOptions applies tweak to every LIST and WATCH.
func WithTweakListOptions(tweak TweakListOptionsFunc) Option {
	return func(f *factory) { f.Tweak = tweak }
}

// WithReflectorOptions sets o (ReflectorOptions.Compact for compact
// stores, the lean options, ...) on every informer the factory builds
// that takes Reflector options (cache.ReflectorConfigurable: this
// module's). A ring's informers (WithNewInformer with Ring.NewInformer)
// take theirs from ring.Config.ReflectorOptions instead.
func WithReflectorOptions(o cache.ReflectorOptions) Option {
	return func(f *factory) { f.Reflector = &o }
}

// WithNewInformer makes newInformer build every informer of the factory
// (given the GVR's ListerWatcher, an *unstructured.Unstructured, the
// resync period and the namespace index) instead of this module's
// constructor: with a ring's NewInformer, every informer of the factory
// is a ring informer. The factory's WaitForSync uses the WaitForSync of
// what it builds when that type-asserts to cache.InformerHealthReporter
// (ring informers do), else waits for its HasSynced until ctx ends.
func WithNewInformer(newInformer NewInformerFunc) Option {
	return func(f *factory) { f.NewInformer = newInformer }
}

// NewDynamicSharedInformerFactoryWithOptions returns a factory for all
// namespaces whose informers resync every defaultResync (0: never),
// configured by options in order.
func NewDynamicSharedInformerFactoryWithOptions(client dynamic.Interface, defaultResync time.Duration, options ...Option) DynamicSharedInformerFactory {
	return newFactory(client, defaultResync, options...)
}
