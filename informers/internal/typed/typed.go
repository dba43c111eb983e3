// Package typed is what the generated group and version packages of
// informers (and through them the factory's accessors) share: one
// resource's constructors, client-go's New<Kind>Informer family building
// this module's informers, and its accessor, client-go's
// Typed<Kind>Informer on a factory's InformerFor.
package typed

import (
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers/internalinterfaces"
	"k8s.io/client-go/kubernetes"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/internal/listwatch"
)

// Object is what a built-in resource's pointer type satisfies.
type Object interface {
	clientgocache.Object
	runtime.Object
}

// Client is what a typed clientset's resource client offers for listing
// and watching objects whose list type is LT.
type Client[LT runtime.Object] = listwatch.Client[LT]

// NewInformerFunc has client-go's NewSharedIndexInformer signature (the
// factory's WithNewInformer).
type NewInformerFunc = func(clientgocache.ListerWatcher, runtime.Object, time.Duration, clientgocache.Indexers) clientgocache.SharedIndexInformer

// WithNewInformer returns f for New of a group or version package, such
// that the accessors it hands out build with newInformer instead of this
// module's constructor (f itself if newInformer is nil).
func WithNewInformer(f internalinterfaces.SharedInformerFactory, newInformer NewInformerFunc) internalinterfaces.SharedInformerFactory {
	if newInformer == nil {
		return f
	}
	return hooked{f, newInformer}
}

// hooked is a factory whose accessors build with newInformer.
type hooked struct {
	internalinterfaces.SharedInformerFactory
	newInformer NewInformerFunc
}

func newInformerOf(f internalinterfaces.SharedInformerFactory) NewInformerFunc {
	if h, ok := f.(hooked); ok {
		return h.newInformer
	}
	return nil
}

// Kind is one resource: objects T, client-go's <Kind>IndexInformer IX,
// its lister L and list type LT. The generated packages declare one per
// resource.
type Kind[T Object, IX, L any, LT runtime.Object] struct {
	// GVR names the resource in client-go's informer metrics.
	GVR schema.GroupVersionResource
	// Client is the typed client of the resource in a namespace
	// (cluster-scoped resources ignore it).
	Client func(client kubernetes.Interface, namespace string) Client[LT]
	// Lister is client-go's lister constructor.
	Lister func(clientgocache.Indexer) L
}

// Informer is New<Kind>InformerWithOptions: this module's informer over
// the typed client's ListWatch (the options' tweak on LIST and WATCH,
// with the client's WatchList semantics), as client-go's builds its own.
func (k *Kind[T, IX, L, LT]) Informer(client kubernetes.Interface, namespace string, options internalinterfaces.InformerOptions) clientgocache.SharedIndexInformer {
	return k.build(nil, client, namespace, options)
}

// Typed is NewTyped<Kind>InformerWithOptions: Informer with client-go's
// type-safe methods, still reporting its health.
func (k *Kind[T, IX, L, LT]) Typed(client kubernetes.Interface, namespace string, options internalinterfaces.InformerOptions) IX {
	return IndexInformer[T, IX](k.Informer(client, namespace, options))
}

func (k *Kind[T, IX, L, LT]) build(newInformer NewInformerFunc, client kubernetes.Interface, namespace string, options internalinterfaces.InformerOptions) clientgocache.SharedIndexInformer {
	lw := clientgocache.ToListWatcherWithWatchListSemantics(listwatch.Typed(k.Client(client, namespace), k.GVR.Resource, options.TweakListOptions), client)
	obj := newObject[T]()
	if newInformer != nil {
		return newInformer(lw, obj, options.ResyncPeriod, options.Indexers)
	}
	return cache.NewSharedIndexInformerWithOptions(lw, obj, cache.SharedIndexInformerOptions{
		ResyncPeriod: options.ResyncPeriod,
		Indexers:     options.Indexers,
		Identifier:   options.InformerName.WithResource(k.GVR),
	})
}

// newObject returns a new zero T (a pointer to a zero object).
func newObject[T Object]() T {
	return reflect.New(reflect.TypeFor[T]().Elem()).Interface().(T)
}

// Accessor returns client-go's Typed<Kind>Informer on f for namespace and
// tweak, as a version package's accessor does.
func (k *Kind[T, IX, L, LT]) Accessor(f internalinterfaces.SharedInformerFactory, namespace string, tweak internalinterfaces.TweakListOptionsFunc) *Accessor[T, IX, L, LT] {
	return &Accessor[T, IX, L, LT]{kind: k, factory: f, namespace: namespace, tweak: tweak}
}

// Accessor implements client-go's Typed<Kind>Informer: the factory's
// informer of T, built (when the factory has none for T yet) by this
// module's constructor or the factory's WithNewInformer.
type Accessor[T Object, IX, L any, LT runtime.Object] struct {
	kind      *Kind[T, IX, L, LT]
	factory   internalinterfaces.SharedInformerFactory
	namespace string
	tweak     internalinterfaces.TweakListOptionsFunc
}

func (a *Accessor[T, IX, L, LT]) defaultInformer(client kubernetes.Interface, resync time.Duration) clientgocache.SharedIndexInformer {
	return a.kind.build(newInformerOf(a.factory), client, a.namespace, internalinterfaces.InformerOptions{
		ResyncPeriod:     resync,
		Indexers:         clientgocache.Indexers{clientgocache.NamespaceIndex: clientgocache.MetaNamespaceIndexFunc},
		InformerName:     a.factory.InformerName(),
		TweakListOptions: a.tweak,
	})
}

// Informer returns the factory's informer for T: this module's, unless
// the factory's InformerFor had one for T from another constructor.
// Unlike client-go's, it is the informer itself (not a typed wrapper), so
// it type-asserts to cache.InformerHealthReporter.
func (a *Accessor[T, IX, L, LT]) Informer() clientgocache.SharedIndexInformer {
	return a.factory.InformerFor(newObject[T](), a.defaultInformer)
}

// TypedInformer returns Informer with client-go's type-safe methods; when
// Informer is this module's, it also type-asserts to
// cache.InformerHealthReporter.
func (a *Accessor[T, IX, L, LT]) TypedInformer() IX { return IndexInformer[T, IX](a.Informer()) }

// Lister returns client-go's lister over Informer's indexer.
func (a *Accessor[T, IX, L, LT]) Lister() L { return a.kind.Lister(a.Informer().GetIndexer()) }

// Untyped is client-go's <Kind>Informer with lister L.
type Untyped[L any] interface {
	Informer() clientgocache.SharedIndexInformer
	Lister() L
}

// Adapt is ToTyped<Kind>Informer for an informer that is not already
// typed: its TypedInformer wraps Informer and keeps its health methods.
func (k *Kind[T, IX, L, LT]) Adapt(informer Untyped[L]) *Adapted[T, IX, L] {
	return &Adapted[T, IX, L]{informer}
}

// Adapted is an Untyped informer with client-go's TypedInformer added.
type Adapted[T Object, IX, L any] struct {
	Untyped[L]
}

// TypedInformer returns Informer with client-go's type-safe methods.
func (a *Adapted[T, IX, L]) TypedInformer() IX { return IndexInformer[T, IX](a.Informer()) }

// IndexInformer is To<Kind>IndexInformer: inf if it is already an IX,
// otherwise inf with client-go's type-safe methods, still reporting its
// health if inf does.
func IndexInformer[T Object, IX any](inf clientgocache.SharedIndexInformer) IX {
	if ix, ok := any(inf).(IX); ok {
		return ix
	}
	typed := clientgocache.NewTypedSharedIndexInformer[T](inf)
	if reporter, ok := inf.(cache.InformerHealthReporter); ok {
		return any(healthTyped[T]{typed, reporter}).(IX)
	}
	return any(typed).(IX)
}

// healthTyped is a typed informer that also reports its health.
type healthTyped[T clientgocache.Object] struct {
	clientgocache.TypedSharedIndexInformer[T]
	cache.InformerHealthReporter
}
