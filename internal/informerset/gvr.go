package informerset

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
)

// NewInformerFunc has client-go's NewSharedIndexInformer signature: the
// factories' WithNewInformer takes one (a ring's NewInformer, say).
type NewInformerFunc = func(clientgocache.ListerWatcher, runtime.Object, time.Duration, clientgocache.Indexers) clientgocache.SharedIndexInformer

// GVRKind is what tells the factories keyed by GVR apart: the client C
// (dynamic or metadata), its resource clients listing L, the object the
// informers hold and client-go's lister of it.
type GVRKind[C any, L runtime.Object] struct {
	// ListWatch is the ListWatch of gvr in namespace through client,
	// tweak (if not nil) applied to every LIST and WATCH (see
	// listwatch.Dynamic and listwatch.Metadata).
	ListWatch func(client C, gvr schema.GroupVersionResource, namespace string, tweak func(*metav1.ListOptions)) *clientgocache.ListWatch
	// Example returns the informers' example object.
	Example func() runtime.Object
	// Lister is client-go's lister of gvr over idx, so its values are
	// client-go's.
	Lister func(idx clientgocache.Indexer, gvr schema.GroupVersionResource) clientgocache.GenericLister
}

// New builds gvr's informer of namespace ("" for all) as client-go's
// dynamic and metadata informers build theirs: over the ListWatch of
// k.ListWatch (tweak, if not nil, applied to every LIST and WATCH)
// wrapped with client's WatchList semantics (a fake client is LISTed);
// this module's informer, described by the GVR, unless newInformer (if
// not nil) builds it.
func (k GVRKind[C, L]) New(client C, gvr schema.GroupVersionResource, namespace string, resync time.Duration, indexers clientgocache.Indexers, tweak func(*metav1.ListOptions), newInformer NewInformerFunc) informers.GenericInformer {
	lw := clientgocache.ToListWatcherWithWatchListSemantics(k.ListWatch(client, gvr, namespace, tweak), client)
	var inf clientgocache.SharedIndexInformer
	if newInformer != nil {
		inf = newInformer(lw, k.Example(), resync, indexers)
	} else {
		inf = cache.NewSharedIndexInformerWithOptions(lw, k.Example(), cache.SharedIndexInformerOptions{
			ResyncPeriod:      resync,
			Indexers:          indexers,
			ObjectDescription: gvr.String(),
		})
	}
	return &generic{informer: inf, lister: func() clientgocache.GenericLister { return k.Lister(inf.GetIndexer(), gvr) }}
}

// generic is GVRKind.New's GenericInformer.
type generic struct {
	informer clientgocache.SharedIndexInformer
	lister   func() clientgocache.GenericLister
}

// Informer returns the informer built (this module's, unless a
// NewInformerFunc built another).
func (g *generic) Informer() clientgocache.SharedIndexInformer { return g.informer }

// Lister returns client-go's lister over the informer's indexer.
func (g *generic) Lister() clientgocache.GenericLister { return g.lister() }

// GVRConfig is what a GVR factory's options set.
type GVRConfig struct {
	Namespace string // "" (metav1.NamespaceAll) for all
	Resync    time.Duration
	Tweak     func(*metav1.ListOptions)
	// Transform, if not nil, is set on every informer built.
	Transform clientgocache.TransformFunc
	// NewInformer, if not nil, builds every informer instead of this
	// module's constructor.
	NewInformer NewInformerFunc
	// Reflector, if not nil, is set on every informer built that takes
	// Reflector options (see SetReflectorOptions).
	Reflector *cache.ReflectorOptions
}

// SetReflectorOptions sets o, if not nil, on inf if it takes Reflector
// options (cache.ReflectorConfigurable), before it has started.
func SetReflectorOptions(inf clientgocache.SharedIndexInformer, o *cache.ReflectorOptions) {
	if o == nil {
		return
	}
	if rc, ok := inf.(cache.ReflectorConfigurable); ok {
		_ = rc.SetReflectorOptions(*o) // not started yet: cannot fail
	}
}

// GVRFactory is a factory keyed by GVR (dynamicinformer's and
// metadatainformer's): ForResource, Start, StartWithContext, Shutdown
// and the waits. A package's factory embeds it and sets its GVRConfig.
type GVRFactory[C any, L runtime.Object] struct {
	GVRConfig
	client C
	kind   GVRKind[C, L]
	set    Set[schema.GroupVersionResource, informers.GenericInformer]
}

// NewGVRFactory returns a factory of kind's informers over client, for
// all namespaces, resyncing every resync (0: never).
func NewGVRFactory[C any, L runtime.Object](client C, kind GVRKind[C, L], resync time.Duration) *GVRFactory[C, L] {
	return &GVRFactory[C, L]{GVRConfig: GVRConfig{Namespace: metav1.NamespaceAll, Resync: resync}, client: client, kind: kind}
}

// ForResource returns the informer of gvr, built on its first request
// (with the namespace index, as client-go's; the transform set): later
// requests get the same one.
func (f *GVRFactory[C, L]) ForResource(gvr schema.GroupVersionResource) informers.GenericInformer {
	return f.set.GetOrAdd(gvr, func() informers.GenericInformer {
		indexers := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
		gi := f.kind.New(f.client, gvr, f.Namespace, f.Resync, indexers, f.Tweak, f.NewInformer)
		if f.Transform != nil {
			_ = gi.Informer().SetTransform(f.Transform) // not started yet: cannot fail
		}
		SetReflectorOptions(gi.Informer(), f.Reflector)
		return gi
	})
}

// Start runs, each in a goroutine until stopCh closes, the informers
// requested since the last Start; it does nothing once Shutdown is called.
func (f *GVRFactory[C, L]) Start(stopCh <-chan struct{}) {
	f.StartWithContext(wait.ContextForChannel(stopCh))
}

// StartWithContext is Start until ctx ends.
func (f *GVRFactory[C, L]) StartWithContext(ctx context.Context) {
	f.set.Start(func(inf informers.GenericInformer) { inf.Informer().RunWithContext(ctx) })
}

// Shutdown stops Start from starting informers and waits until every
// informer started has returned (stop them first: close Start's channel
// or end its context). It may be called more than once, concurrently.
func (f *GVRFactory[C, L]) Shutdown() { f.set.Shutdown() }

// WaitForCacheSync waits until every started informer has synced or
// stopCh closes, and reports each one's HasSynced.
func (f *GVRFactory[C, L]) WaitForCacheSync(stopCh <-chan struct{}) map[schema.GroupVersionResource]bool {
	started, _ := f.set.Snapshot()
	res := make(map[schema.GroupVersionResource]bool, len(started))
	for gvr, inf := range started {
		res[gvr] = clientgocache.WaitForCacheSync(stopCh, inf.Informer().HasSynced)
	}
	return res
}

// WaitForSync blocks until every informer requested so far has synced
// (nil), or ctx ends or each one not synced has stopped; its error then
// names each GVR not synced, with its informer's WaitForSync error (the
// last list/watch error; cache.ErrStopped if it stopped) or that it was
// requested after the last Start.
func (f *GVRFactory[C, L]) WaitForSync(ctx context.Context) error {
	return f.set.WaitForSync(ctx, cache.ErrNotSynced, func(ctx context.Context, inf informers.GenericInformer) error {
		return WaitOne(ctx, inf.Informer())
	})
}

// WaitOne waits for one informer: with its own WaitForSync when it is
// this module's (or a ring's), else on its HasSyncedChecker until it
// syncs or ctx ends.
func WaitOne(ctx context.Context, inf clientgocache.SharedIndexInformer) error {
	if r, ok := inf.(cache.InformerHealthReporter); ok {
		return r.WaitForSync(ctx)
	}
	if clientgocache.WaitFor(ctx, "", inf.HasSyncedChecker()) {
		return nil
	}
	return fmt.Errorf("%w: %w", cache.ErrNotSynced, context.Cause(ctx))
}
