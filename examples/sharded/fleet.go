package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/cachetest"
)

// fleet is the replicas of one process: their informers and shards.
type fleet struct {
	informers []cache.SharedIndexInformer
	shards    []cache.Shard
	// minOwners is the fewest replicas seen owning an object while a
	// reshard ran, in samples samples (see sample).
	minOwners, samples int
}

func (f *fleet) start(ctx context.Context, wg *sync.WaitGroup, inf cache.SharedIndexInformer, s cache.Shard) {
	f.informers = append(f.informers, inf)
	f.shards = append(f.shards, s)
	wg.Go(func() { inf.RunWithContext(ctx) })
}

// waitFor waits until every replica has synced with its shard.
func (f *fleet) waitFor(ctx context.Context) error {
	for i, inf := range f.informers {
		if err := inf.(cache.Resharder).WaitForShard(ctx, f.shards[i]); err != nil {
			return fmt.Errorf("replica %d: %w", i, err)
		}
	}
	return nil
}

// reshard moves the fleet to n replicas without a moment in which an
// object has no owner: new replicas start on their new shard, old ones
// first take the union of their old and new shard, and only once all have
// synced does each old one shrink to its new shard. It samples the owners
// of the objects in resident throughout (see sample).
func (f *fleet) reshard(ctx context.Context, wg *sync.WaitGroup, d *demo, n int, resident []runtime.Object) error {
	old := len(f.informers)
	final := make([]cache.Shard, n)
	for i := range n {
		s, err := cache.ReplicaShard(i, n)
		if err != nil {
			return err
		}
		final[i] = s
	}
	for i := old; i < n; i++ {
		f.start(ctx, wg, d.newReplica(final[i]), final[i])
	}
	sampler := f.sample(ctx, resident)
	defer sampler()
	for i := range old {
		u, err := f.shards[i].Union(final[i])
		if err != nil {
			return err
		}
		f.setShard(i, u)
	}
	if err := f.waitFor(ctx); err != nil {
		return err
	}
	for i := range old {
		f.setShard(i, final[i])
	}
	return f.waitFor(ctx)
}

func (f *fleet) setShard(i int, s cache.Shard) {
	f.shards[i] = s
	if err := f.informers[i].(cache.Resharder).SetShard(s); err != nil {
		panic(err) // our informers are sharded: cannot happen
	}
}

// sample checks, every millisecond until stopped, how many replicas own
// each of objs, keeping the fewest in minOwners and the number of samples
// in samples. objs must be objects every replica has already seen (synced
// before the writer started): one created since may not have reached any
// watch yet, and would count as unowned.
func (f *fleet) sample(ctx context.Context, objs []runtime.Object) (stop func()) {
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	informers := append([]cache.SharedIndexInformer(nil), f.informers...)
	f.minOwners, f.samples = len(informers)+1, 0
	go func() {
		defer close(done)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for sctx.Err() == nil {
			owners := ownersOf(informers)
			for _, o := range objs {
				f.minOwners = min(f.minOwners, owners[keyOf(o.(*corev1.ConfigMap))])
			}
			f.samples++
			select {
			case <-sctx.Done():
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// ownersOf counts, for each key, the replicas whose store holds it.
func ownersOf(informers []cache.SharedIndexInformer) map[string]int {
	owners := map[string]int{}
	for _, inf := range informers {
		for _, k := range inf.GetStore().ListKeys() {
			owners[k]++
		}
	}
	return owners
}

func keyOf(c *corev1.ConfigMap) string { return c.Namespace + "/" + c.Name }

// writer creates and updates ConfigMaps until stopped.
type writer struct {
	cancel context.CancelFunc
	done   chan struct{}
	n      atomic.Int64
}

func startWriter(ctx context.Context, wg *sync.WaitGroup, cms *cachetest.Resource, first int) *writer {
	wctx, cancel := context.WithCancel(ctx)
	w := &writer{cancel: cancel, done: make(chan struct{})}
	wg.Go(func() {
		defer close(w.done)
		for i := 0; wctx.Err() == nil; i++ {
			c := configMap(first + i)
			if i%2 == 1 {
				c = configMap(i)
				c.Data["v"] = fmt.Sprint(i)
			}
			var err error
			if i%2 == 1 {
				_, err = cms.Update(wctx, c, metav1.UpdateOptions{})
			} else {
				_, err = cms.Create(wctx, c, metav1.CreateOptions{})
			}
			if err == nil {
				w.n.Add(1)
			}
			select {
			case <-wctx.Done():
			case <-time.After(2 * time.Millisecond):
			}
		}
	})
	return w
}

func (w *writer) stop()         { w.cancel(); <-w.done }
func (w *writer) writes() int64 { return w.n.Load() }

// waitCaughtUp waits until every replica holds its part of the server's
// state: each object the server holds, at its resourceVersion, in exactly
// one replica, and nothing else. (A sharded replica's resourceVersion
// trails the server's: it sees only its shard's changes, and bookmarks.)
func waitCaughtUp(ctx context.Context, cms *cachetest.Resource, informers []cache.SharedIndexInformer) error {
	for {
		if inStep(cms, informers) {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.New("replicas did not catch up with the server")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func inStep(cms *cachetest.Resource, informers []cache.SharedIndexInformer) bool {
	objs, _ := cms.Objects()
	held := map[string]string{}
	for _, inf := range informers {
		for _, o := range inf.GetStore().List() {
			c := o.(*corev1.ConfigMap)
			if _, twice := held[keyOf(c)]; twice {
				return false
			}
			held[keyOf(c)] = c.ResourceVersion
		}
	}
	for _, o := range objs {
		c := o.(*corev1.ConfigMap)
		if held[keyOf(c)] != c.ResourceVersion {
			return false
		}
	}
	return len(held) == len(objs)
}

// fetched sums the objects the fleet's replicas have received from LISTs,
// their shard merges and relists.
func (f *fleet) fetched() (items, merged, relisted uint64) {
	for _, inf := range f.informers {
		st := inf.(cache.InformerHealthReporter).Stats().Reflector
		items += st.ItemsListed
		merged += st.ReshardsMerged
		relisted += st.Lists[cache.ListReshard]
	}
	return items, merged, relisted
}

// movedBetween counts the objects of objs whose replica differs between
// the shards from and to (replica i holds from[i], then to[i]).
func movedBetween(objs []runtime.Object, from, to []cache.Shard) int {
	index := func(shards []cache.Shard, o runtime.Object) int {
		for i, s := range shards {
			if in, _ := s.Contains(o); in {
				return i
			}
		}
		return -1
	}
	moved := 0
	for _, o := range objs {
		if index(from, o) != index(to, o) {
			moved++
		}
	}
	return moved
}
