package informers

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"

	"k8s.io/apimachinery/pkg/util/wait"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
)

// WaitForCacheSync waits until every started informer has synced or
// stopCh closes, and reports each one's HasSynced, as client-go's does.
func (f *factory) WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool {
	return f.WaitForCacheSyncWithContext(wait.ContextForChannel(stopCh)).Synced
}

// WaitForCacheSyncWithContext is WaitForCacheSync until ctx ends; Err is
// ctx's cause if some informer has not synced.
func (f *factory) WaitForCacheSyncWithContext(ctx context.Context) clientgocache.SyncResult {
	started, _ := f.snapshot()
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

// snapshot returns the started informers and the types of those
// requested but not started.
func (f *factory) snapshot() (map[reflect.Type]clientgocache.SharedIndexInformer, []reflect.Type) {
	f.mu.Lock()
	defer f.mu.Unlock()
	started := map[reflect.Type]clientgocache.SharedIndexInformer{}
	var pending []reflect.Type
	for typ, inf := range f.informers {
		if f.started[typ] {
			started[typ] = inf
		} else {
			pending = append(pending, typ)
		}
	}
	return started, pending
}

// errNotStarted is wrapped by WaitForSync's error for an informer that
// was requested after the factory's last Start.
var errNotStarted = errors.New("requested but not started (call the factory's Start after requesting it)")

// WaitForSync: see SharedInformerFactory.
func (f *factory) WaitForSync(ctx context.Context) error {
	started, pending := f.snapshot()
	var errs []error
	for _, typ := range pending {
		errs = append(errs, fmt.Errorf("%v: %w: %w", typ, cache.ErrNotSynced, errNotStarted))
	}
	for typ, inf := range started {
		if err := waitOne(ctx, inf); err != nil {
			errs = append(errs, fmt.Errorf("%v: %w", typ, err))
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errors.Join(errs...)
}

// waitOne waits for one informer: with its own WaitForSync when it is
// this module's, else on its HasSyncedChecker.
func waitOne(ctx context.Context, inf clientgocache.SharedIndexInformer) error {
	if r, ok := inf.(cache.InformerHealthReporter); ok {
		return r.WaitForSync(ctx)
	}
	if clientgocache.WaitFor(ctx, "", inf.HasSyncedChecker()) {
		return nil
	}
	return fmt.Errorf("%w: %w", cache.ErrNotSynced, context.Cause(ctx))
}

// Health: see SharedInformerFactory.
func (f *factory) Health() map[reflect.Type]cache.InformerHealth {
	started, _ := f.snapshot()
	out := make(map[reflect.Type]cache.InformerHealth, len(started))
	for typ, inf := range started {
		if r, ok := inf.(cache.InformerHealthReporter); ok {
			out[typ] = r.Health()
		}
	}
	return out
}
