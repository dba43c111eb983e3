package informers

import (
	"context"
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/informers/internalinterfaces"
	"k8s.io/client-go/kubernetes"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/informers/internal/typed"
	"github.com/kreflector/cache/internal/informerset"
)

// SharedInformerFactory is client-go's SharedInformerFactory whose typed
// accessors and ForResource hand out this module's informers, with a
// wait and a health report over all of them.
type SharedInformerFactory interface {
	clientgoinformers.SharedInformerFactory
	// WaitForSync blocks until every informer requested so far has synced
	// (nil), or ctx ends or each one not synced has stopped. Its error
	// then names each informer not synced, by object type, with why: an
	// informer requested but not started since, or its own WaitForSync
	// error (the last list/watch error; cache.ErrStopped if it stopped).
	// An informer that is not this module's is waited for until it syncs
	// or ctx ends.
	WaitForSync(ctx context.Context) error
	// Health returns each started informer's health, by object type, for
	// the informers that are this module's (not those a custom
	// InformerFor newFunc built otherwise).
	Health() map[reflect.Type]cache.InformerHealth
}

// GenericInformer is client-go's GenericInformer.
type GenericInformer = clientgoinformers.GenericInformer

// SharedInformerOption configures a factory (client-go's option type
// wraps client-go's own factory, so this package has its own).
type SharedInformerOption func(*factory) *factory

// factory is the SharedInformerFactory; its informers map is keyed by
// the object's type, shared by InformerFor and the typed accessors.
type factory struct {
	client        kubernetes.Interface
	namespace     string
	tweak         internalinterfaces.TweakListOptionsFunc
	defaultResync time.Duration
	customResync  map[reflect.Type]time.Duration
	transform     clientgocache.TransformFunc
	informerName  *clientgocache.InformerName
	newInformer   NewInformerFunc
	reflector     *cache.ReflectorOptions

	informers informerset.Set[reflect.Type, clientgocache.SharedIndexInformer]
}

var (
	_ clientgoinformers.SharedInformerFactory  = &factory{}
	_ internalinterfaces.SharedInformerFactory = &factory{}
	_ SharedInformerFactory                    = &factory{}
	_ clientgoinformers.SharedInformerFactory  = SharedInformerFactory(nil)
)

// WithCustomResyncConfig sets the resync period of the informers of the
// given objects' types (instead of the factory's default).
func WithCustomResyncConfig(resyncConfig map[metav1.Object]time.Duration) SharedInformerOption {
	return func(f *factory) *factory {
		for obj, period := range resyncConfig {
			f.customResync[reflect.TypeOf(obj)] = period
		}
		return f
	}
}

// WithTweakListOptions applies tweak to the options of every LIST and
// WATCH of the factory's informers (a label or field selector, say).
func WithTweakListOptions(tweak internalinterfaces.TweakListOptionsFunc) SharedInformerOption {
	return func(f *factory) *factory {
		f.tweak = tweak
		return f
	}
}

// WithNamespace limits the factory's namespaced informers to namespace.
func WithNamespace(namespace string) SharedInformerOption {
	return func(f *factory) *factory {
		f.namespace = namespace
		return f
	}
}

// WithTransform sets transform on every informer the factory builds.
func WithTransform(transform clientgocache.TransformFunc) SharedInformerOption {
	return func(f *factory) *factory {
		f.transform = transform
		return f
	}
}

// WithInformerName names the factory's informers in client-go's metrics
// (create it with client-go's cache.NewInformerName).
func WithInformerName(name *clientgocache.InformerName) SharedInformerOption {
	return func(f *factory) *factory {
		f.informerName = name
		return f
	}
}

// NewInformerFunc has client-go's NewSharedIndexInformer signature (and
// controller-runtime's cache.Options.NewInformer type): ring.Ring's
// NewInformer, this module's cache.NewSharedIndexInformer, or a
// constructor of one's own.
type NewInformerFunc = func(clientgocache.ListerWatcher, runtime.Object, time.Duration, clientgocache.Indexers) clientgocache.SharedIndexInformer

// WithNewInformer makes newInformer build every informer of the
// factory's accessors and ForResource, instead of this module's
// constructor: with a ring's NewInformer, every informer of the factory
// is a ring informer. newInformer is given the resource's ListerWatcher
// (the factory's namespace and tweak applied, with the client's WatchList
// semantics), the example object, the resync period and the namespace
// index; the factory then sets its transform. The signature has no room
// for WithInformerName's metrics identifier, so such informers go
// without it; InformerFor's own newFunc is not affected. Health and
// WaitForSync cover the informers built that type-assert to
// cache.InformerHealthReporter (ring informers do).
func WithNewInformer(newInformer NewInformerFunc) SharedInformerOption {
	return func(f *factory) *factory {
		f.newInformer = newInformer
		return f
	}
}

// WithReflectorOptions sets o (ReflectorOptions.Compact for compact
// stores, the lean options, ...) on every informer the factory builds
// that takes Reflector options (cache.ReflectorConfigurable: this
// module's). A ring's informers (WithNewInformer with Ring.NewInformer)
// take theirs from ring.Config.ReflectorOptions instead.
func WithReflectorOptions(o cache.ReflectorOptions) SharedInformerOption {
	return func(f *factory) *factory {
		f.reflector = &o
		return f
	}
}

// NewSharedInformerFactory returns a factory for all namespaces whose
// informers resync every defaultResync (0: never).
func NewSharedInformerFactory(client kubernetes.Interface, defaultResync time.Duration) SharedInformerFactory {
	return NewSharedInformerFactoryWithOptions(client, defaultResync)
}

// NewFilteredSharedInformerFactory is NewSharedInformerFactoryWithOptions
// with WithNamespace(namespace) and WithTweakListOptions(tweak).
//
// Deprecated: use NewSharedInformerFactoryWithOptions, as in client-go.
func NewFilteredSharedInformerFactory(client kubernetes.Interface, defaultResync time.Duration, namespace string, tweak internalinterfaces.TweakListOptionsFunc) SharedInformerFactory {
	return NewSharedInformerFactoryWithOptions(client, defaultResync, WithNamespace(namespace), WithTweakListOptions(tweak))
}

// NewSharedInformerFactoryWithOptions returns a factory configured by
// options, applied in order.
func NewSharedInformerFactoryWithOptions(client kubernetes.Interface, defaultResync time.Duration, options ...SharedInformerOption) SharedInformerFactory {
	f := &factory{
		client:        client,
		namespace:     metav1.NamespaceAll,
		defaultResync: defaultResync,
		customResync:  map[reflect.Type]time.Duration{},
	}
	for _, opt := range options {
		f = opt(f)
	}
	return f
}

// InformerName returns the name set by WithInformerName (nil if none).
func (f *factory) InformerName() *clientgocache.InformerName { return f.informerName }

// Start runs, each in a goroutine until stopCh closes, the informers
// requested since the last Start; it does nothing once Shutdown is called.
func (f *factory) Start(stopCh <-chan struct{}) {
	f.StartWithContext(wait.ContextForChannel(stopCh))
}

// StartWithContext is Start until ctx ends.
func (f *factory) StartWithContext(ctx context.Context) {
	f.informers.Start(func(inf clientgocache.SharedIndexInformer) { inf.RunWithContext(ctx) })
}

// Shutdown stops Start from starting informers and waits until every
// informer started has returned (stop them first: close Start's channel
// or end its context). It may be called more than once, concurrently.
func (f *factory) Shutdown() {
	f.informers.Shutdown()
	f.informerName.Release()
}

// InformerFor returns the informer of obj's type, building it with
// newFunc (given the factory's client and the type's resync period) if
// the type has none yet: the first registration of a type wins, whether
// by InformerFor or by a typed accessor, as in client-go.
func (f *factory) InformerFor(obj runtime.Object, newFunc internalinterfaces.NewInformerFunc) clientgocache.SharedIndexInformer {
	return f.informerFor(obj, func(resync time.Duration) clientgocache.SharedIndexInformer {
		return newFunc(f.client, resync)
	})
}

// informerFor is InformerFor with the builder given its resync period;
// the factory's transform is set on what it builds.
func (f *factory) informerFor(obj runtime.Object, build func(time.Duration) clientgocache.SharedIndexInformer) clientgocache.SharedIndexInformer {
	typ := reflect.TypeOf(obj)
	return f.informers.GetOrAdd(typ, func() clientgocache.SharedIndexInformer {
		resync, ok := f.customResync[typ]
		if !ok {
			resync = f.defaultResync
		}
		inf := build(resync)
		if f.transform != nil {
			_ = inf.SetTransform(f.transform) // not started yet: cannot fail
		}
		informerset.SetReflectorOptions(inf, f.reflector)
		return inf
	})
}

// typedFactory is the factory as the generated group packages' New is
// given it: itself, with WithNewInformer's constructor if one was set.
func (f *factory) typedFactory() internalinterfaces.SharedInformerFactory {
	return typed.WithNewInformer(f, f.newInformer)
}
