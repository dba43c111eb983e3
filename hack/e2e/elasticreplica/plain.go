package main

import (
	"context"
	"os"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/shard"
)

// runPlain is --mode=plain: one ordinary, unsharded informer over every
// ConfigMap of the namespace, as a controller with no sharding runs. It
// logs as a static replica does, its "shard" the whole hash space (so
// that the logs read the same way: it handles every object).
func runPlain(ctx context.Context, o options, lw clientgocache.ListerWatcher, log *logger, usr1 <-chan os.Signal) error {
	all, err := shard.Replica(0, 1)
	if err != nil {
		return err
	}
	log.write(record{Kind: "start", Shard: all.String(), Settings: "plain (unsharded)"})
	inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	h := &handler{log: log}
	h.on.Store(true)
	if _, err := inf.AddEventHandler(h.funcs()); err != nil {
		return err
	}
	stats := startStats(ctx, o.statsEvery, log, inf.(statser))
	var wg sync.WaitGroup
	wg.Go(func() { inf.RunWithContext(ctx) })
	synced := atomic.Bool{}
	wg.Go(func() {
		if clientgocache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			synced.Store(true)
			log.write(record{Kind: "open", Shard: all.String()})
		}
	})
	wg.Go(func() {
		reportStatus(ctx, o.statusEvery, log, inf, usr1, func() record {
			return record{Formed: synced.Load()}
		})
	})
	<-ctx.Done()
	h.on.Store(false)
	if synced.Load() {
		log.write(record{Kind: "close", Shard: all.String()})
	}
	wg.Wait()
	stats.final()
	log.write(record{Kind: "exit"})
	return nil
}
