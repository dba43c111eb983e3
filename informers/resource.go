package informers

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/internal/listwatch"
)

// object is what a built-in resource's pointer type satisfies.
type object interface {
	clientgocache.Object
	runtime.Object
}

// typedClient is what a typed clientset's resource client offers for
// listing and watching objects whose list type is L.
type typedClient[L runtime.Object] = listwatch.Client[L]

// resource implements client-go's Typed<Kind>Informer for objects T
// whose typed informer type is I and lister type L; the generated
// accessors return one.
type resource[T object, I, L any] struct {
	f      *factory
	obj    T
	build  func(time.Duration) clientgocache.SharedIndexInformer
	lister func(clientgocache.Indexer) L
}

// newResource describes one resource: its example object, its GVR (for
// client-go's metrics identifier), how to reach its typed client for a
// namespace (ignored by cluster-scoped resources) and client-go's lister
// constructor.
func newResource[T object, I, L any, LT runtime.Object](f *factory, obj T, gvr schema.GroupVersionResource, client func(kubernetes.Interface, string) typedClient[LT], lister func(clientgocache.Indexer) L) *resource[T, I, L] {
	build := func(resync time.Duration) clientgocache.SharedIndexInformer {
		lw := clientgocache.ToListWatcherWithWatchListSemantics(listwatch.New(client(f.client, f.namespace), f.tweak), f.client)
		indexers := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
		if f.newInformer != nil {
			return f.newInformer(lw, obj, resync, indexers)
		}
		return cache.NewSharedIndexInformerWithOptions(lw, obj, cache.SharedIndexInformerOptions{
			ResyncPeriod: resync,
			Indexers:     indexers,
			Identifier:   f.informerName.WithResource(gvr),
		})
	}
	return &resource[T, I, L]{f: f, obj: obj, build: build, lister: lister}
}

// Informer returns the factory's informer for T, this module's unless
// InformerFor registered another for T first.
func (r *resource[T, I, L]) Informer() clientgocache.SharedIndexInformer {
	return r.f.informerFor(r.obj, r.build)
}

// TypedInformer returns Informer with client-go's type-safe methods; when
// Informer is this module's, it also type-asserts to
// cache.InformerHealthReporter.
func (r *resource[T, I, L]) TypedInformer() I {
	inf := r.Informer()
	typed := clientgocache.NewTypedSharedIndexInformer[T](inf)
	if reporter, ok := inf.(cache.InformerHealthReporter); ok {
		return any(healthTyped[T]{typed, reporter}).(I)
	}
	return any(typed).(I)
}

// Lister returns client-go's lister over Informer's indexer.
func (r *resource[T, I, L]) Lister() L { return r.lister(r.Informer().GetIndexer()) }

// healthTyped is a typed informer that also reports its health.
type healthTyped[T clientgocache.Object] struct {
	clientgocache.TypedSharedIndexInformer[T]
	cache.InformerHealthReporter
}

// genericInformer is ForResource's result.
type genericInformer struct {
	informer clientgocache.SharedIndexInformer
	resource schema.GroupResource
}

func (g *genericInformer) Informer() clientgocache.SharedIndexInformer { return g.informer }

func (g *genericInformer) Lister() clientgocache.GenericLister {
	return clientgocache.NewGenericLister(g.informer.GetIndexer(), g.resource)
}

// ForResource returns the informer of a built-in resource (every GVR
// client-go's ForResource knows) and an error for any other.
func (f *factory) ForResource(gvr schema.GroupVersionResource) (GenericInformer, error) {
	informer, ok := builtin[gvr]
	if !ok {
		return nil, fmt.Errorf("no informer found for %v", gvr)
	}
	return &genericInformer{informer: informer(f), resource: gvr.GroupResource()}, nil
}
