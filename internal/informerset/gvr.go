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
	"github.com/kreflector/cache/internal/listwatch"
)

// NewInformerFunc has client-go's NewSharedIndexInformer signature: the
// factories' WithNewInformer takes one (a ring's NewInformer, say).
type NewInformerFunc = func(clientgocache.ListerWatcher, runtime.Object, time.Duration, clientgocache.Indexers) clientgocache.SharedIndexInformer

// GVRFactory is the part of a factory keyed by GVR (dynamicinformer,
// metadatainformer) that does not depend on what it lists: ForResource
// over a build function, Start, Shutdown and the waits. A factory embeds
// it, so these methods are the factory's.
type GVRFactory struct {
	build func(schema.GroupVersionResource) informers.GenericInformer
	set   Set[schema.GroupVersionResource, informers.GenericInformer]
}

// NewGVRFactory returns a GVRFactory whose ForResource builds a GVR's
// informer with build on its first request.
func NewGVRFactory(build func(schema.GroupVersionResource) informers.GenericInformer) *GVRFactory {
	return &GVRFactory{build: build}
}

// ForResource returns the informer of gvr, built on its first request:
// later requests get the same one.
func (f *GVRFactory) ForResource(gvr schema.GroupVersionResource) informers.GenericInformer {
	return f.set.GetOrAdd(gvr, func() informers.GenericInformer { return f.build(gvr) })
}

// Start runs, each in a goroutine until stopCh closes, the informers
// requested since the last Start; it does nothing once Shutdown is called.
func (f *GVRFactory) Start(stopCh <-chan struct{}) {
	f.StartWithContext(wait.ContextForChannel(stopCh))
}

// StartWithContext is Start until ctx ends.
func (f *GVRFactory) StartWithContext(ctx context.Context) {
	f.set.Start(func(inf informers.GenericInformer) { inf.Informer().RunWithContext(ctx) })
}

// Shutdown stops Start from starting informers and waits until every
// informer started has returned (stop them first: close Start's channel
// or end its context). It may be called more than once, concurrently.
func (f *GVRFactory) Shutdown() { f.set.Shutdown() }

// WaitForCacheSync waits until every started informer has synced or
// stopCh closes, and reports each one's HasSynced.
func (f *GVRFactory) WaitForCacheSync(stopCh <-chan struct{}) map[schema.GroupVersionResource]bool {
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
func (f *GVRFactory) WaitForSync(ctx context.Context) error {
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

// GVRInformer says how to build one GVR's informer.
type GVRInformer struct {
	GVR schema.GroupVersionResource
	// Client is the client the ListWatch's resource client came from;
	// its WatchList semantics are the ListWatch's.
	Client  any
	Example runtime.Object
	Resync  time.Duration
	// Indexers are the informer's; the factories give the namespace index.
	Indexers clientgocache.Indexers
	// NewInformer, if not nil, builds the informer instead of this
	// module's constructor.
	NewInformer NewInformerFunc
	// Lister makes the GenericInformer's lister over the indexer:
	// client-go's own, so its values are client-go's.
	Lister func(clientgocache.Indexer) clientgocache.GenericLister
}

// NewGVRInformer builds one GVR's informer as client-go's dynamic and
// metadata informers build theirs: over rc's ListWatch (tweak, if not
// nil, applied to every LIST and WATCH) wrapped with the client's
// WatchList semantics (a fake client is LISTed); this module's informer,
// described by the GVR, unless spec.NewInformer builds it.
func NewGVRInformer[L runtime.Object](rc listwatch.Client[L], tweak func(*metav1.ListOptions), spec GVRInformer) informers.GenericInformer {
	lw := clientgocache.ToListWatcherWithWatchListSemantics(listwatch.New(rc, tweak), spec.Client)
	var inf clientgocache.SharedIndexInformer
	if spec.NewInformer != nil {
		inf = spec.NewInformer(lw, spec.Example, spec.Resync, spec.Indexers)
	} else {
		inf = cache.NewSharedIndexInformerWithOptions(lw, spec.Example, cache.SharedIndexInformerOptions{
			ResyncPeriod:      spec.Resync,
			Indexers:          spec.Indexers,
			ObjectDescription: spec.GVR.String(),
		})
	}
	return &generic{informer: inf, lister: spec.Lister}
}

// generic is NewGVRInformer's GenericInformer.
type generic struct {
	informer clientgocache.SharedIndexInformer
	lister   func(clientgocache.Indexer) clientgocache.GenericLister
}

// Informer returns the informer built (this module's, unless
// GVRInformer.NewInformer built another).
func (g *generic) Informer() clientgocache.SharedIndexInformer { return g.informer }

// Lister returns the GVR's lister over the informer's indexer.
func (g *generic) Lister() clientgocache.GenericLister { return g.lister(g.informer.GetIndexer()) }
