package bench

import (
	"context"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kreflector/cache"
)

// BenchmarkWatchEventsSharded: BenchmarkWatchEvents for a Reflector of
// replica 0 of 2, on a server that applies the shard selector (every event
// is in the shard). impl=kreflector-sharded verifies the stream (see
// ReflectorOptions.Shard), impl=kreflector is the same Reflector unsharded,
// impl=client-go sends the selector and checks nothing. Per event; the
// verification's cost is kreflector-sharded against kreflector.
//
//	go test -run '^$' -bench 'WatchEventsSharded' -benchmem -count 6 ./bench/
func BenchmarkWatchEventsSharded(b *testing.B) {
	shard, err := cache.ReplicaShard(0, 2)
	if err != nil {
		b.Fatal(err)
	}
	events := shardedEvents(b, shard, benchEvents)
	impls := []struct {
		name string
		run  reflectorRun
	}{
		{"kreflector", benchImpls[0].run},
		{"kreflector-sharded", func(ctx context.Context, lw *benchLW, store cache.ReflectorStore) {
			cache.NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, cache.ReflectorOptions{Name: "bench", Shard: &shard}).RunWithContext(ctx)
		}},
		// benchLW answers the same whatever the options say.
		{"client-go", benchImpls[1].run},
	}
	for _, impl := range impls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			m := newItemMeter(b, len(events))
			for range b.N {
				base := liveHeap()
				first := events[0].Object.(*corev1.ConfigMap)
				tiny := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1", ShardInfo: &metav1.ShardInfo{Selector: shard.String()}}, Items: []corev1.ConfigMap{*first}}
				lw := &benchLW{pages: map[string]*corev1.ConfigMapList{"": tiny}, queued: []*benchWatch{queuedWatch(events)}}
				store := newNoopStore(len(events))
				m.syncInto(impl.run, lw, store, store.done, base)
			}
			m.report()
		})
	}
}

// shardedEvents is mixedEvents with every object's UID moved into s.
func shardedEvents(b *testing.B, s cache.Shard, n int) []watch.Event {
	events := mixedEvents(n)
	for _, e := range events {
		c := e.Object.(*corev1.ConfigMap)
		base := c.UID
		for i := 0; ; i++ {
			if ok, _ := s.Contains(c); ok {
				break
			}
			c.UID = base + types.UID("-"+strconv.Itoa(i))
		}
	}
	return events
}
