package informers

import (
	"context"
	"reflect"

	"k8s.io/apimachinery/pkg/util/wait"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/internal/informerset"
)

// WaitForCacheSync waits until every started informer has synced or
// stopCh closes, and reports each one's HasSynced, as client-go's does.
func (f *factory) WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool {
	return f.WaitForCacheSyncWithContext(wait.ContextForChannel(stopCh)).Synced
}

// WaitForCacheSyncWithContext is WaitForCacheSync until ctx ends; Err is
// ctx's cause if some informer has not synced.
func (f *factory) WaitForCacheSyncWithContext(ctx context.Context) clientgocache.SyncResult {
	started, _ := f.informers.Snapshot()
	checkers := make([]clientgocache.DoneChecker, 0, len(started))
	for _, inf := range started {
		checkers = append(checkers, inf.HasSyncedChecker())
	}
	clientgocache.WaitFor(ctx, "", checkers...)
	res := clientgocache.SyncResult{Synced: make(map[reflect.Type]bool, len(started))}
	for typ, inf := range started {
		res.Synced[typ] = inf.HasSynced()
		if !res.Synced[typ] {
			res.Err = context.Cause(ctx)
		}
	}
	return res
}

// WaitForSync: see SharedInformerFactory.
func (f *factory) WaitForSync(ctx context.Context) error {
	return f.informers.WaitForSync(ctx, cache.ErrNotSynced, informerset.WaitOne)
}

// Health: see SharedInformerFactory.
func (f *factory) Health() map[reflect.Type]cache.InformerHealth {
	started, _ := f.informers.Snapshot()
	out := make(map[reflect.Type]cache.InformerHealth, len(started))
	for typ, inf := range started {
		if r, ok := inf.(cache.InformerHealthReporter); ok {
			out[typ] = r.Health()
		}
	}
	return out
}
