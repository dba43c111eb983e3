package cache

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgofeatures "k8s.io/client-go/features"
	clientgocache "k8s.io/client-go/tools/cache"
)

var _ Resharder = &sharedIndexInformer{}

// SetShard sets the informer's shard (see ReflectorOptions.Shard and
// Reflector.SetShard). Before Run it makes the informer a sharded one; while
// it runs it reshards: the Reflector lists only the ranges the new shard
// adds and merges them into the indexer (or relists, where it cannot
// merge), and handlers see objects that left the shard deleted, objects
// that entered it added, and no call for the objects that stay. While running, an informer started unsharded fails with
// ErrNotSharded. The zero Shard fails with ErrInvalidShard.
func (s *sharedIndexInformer) SetShard(sh Shard) error {
	if sh.IsZero() {
		return fmt.Errorf("%w: SetShard with the zero Shard", ErrInvalidShard)
	}
	err := s.beforeStart(func() {
		var o ReflectorOptions
		if s.reflectorOptions != nil {
			o = *s.reflectorOptions
		}
		o.Shard = &sh
		s.setReflectorOptions(o)
	})
	if err != errStarted {
		return err
	}
	s.mu.Lock()
	ctrl := s.ctrl
	s.mu.Unlock()
	return ctrl.setShard(sh)
}

// WaitForShard blocks until the informer's indexer holds shard s's
// objects: its Reflector has synced with s (see Reflector.WaitForShard)
// and that sync has been applied to the indexer (nil), ctx ends, or the
// informer has stopped (at once if it had: the error wraps ErrNotSynced
// and ErrStopped). With client-go's AtomicFIFO feature gate off (it is on
// by default), the queue does not mark where a sync ends, and it returns
// once the Reflector has synced: the indexer follows as the queue is
// processed.
func (s *sharedIndexInformer) WaitForShard(ctx context.Context, sh Shard) error {
	r, err := s.builtReflector(ctx)
	if err != nil {
		return shardNotSynced(sh, err)
	}
	for {
		if err := r.WaitForShard(ctx, sh); err != nil || !clientgofeatures.FeatureGates().Enabled(clientgofeatures.AtomicFIFO) {
			return err
		}
		// Each of the Reflector's syncs was one Replace of the queue,
		// which the indexer gets as one ReplacedAll, in order.
		_, syncs, synced := r.shards.lastSynced()
		applied, changed := s.replaced.get()
		switch {
		case applied >= syncs:
			return nil
		case closed(s.halted):
			return shardNotSynced(sh, ErrStopped)
		}
		select {
		case <-changed:
		case <-synced:
		case <-s.halted:
		case <-ctx.Done():
			return shardNotSynced(sh, ctx.Err())
		}
	}
}

// builtReflector waits until Run has built the informer's Reflector and
// returns it, or ctx's error, or ErrStopped if the informer stopped
// without building one.
func (s *sharedIndexInformer) builtReflector(ctx context.Context) (*Reflector, error) {
	select {
	case <-s.reflectorBuilt:
	case <-s.halted:
		if !closed(s.reflectorBuilt) {
			return nil, ErrStopped
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s.mu.Lock()
	ctrl := s.ctrl
	s.mu.Unlock()
	return ctrl.runningReflector(), nil
}

// closed says whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// replaceMark counts the whole-state replacements applied to an
// informer's indexer.
type replaceMark struct {
	mu sync.Mutex
	n  uint64
	// changed is closed and replaced when n grows.
	changed chan struct{}
}

// add counts one; a nil mark counts nothing.
func (m *replaceMark) add() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n++
	if m.changed != nil {
		close(m.changed)
	}
	m.changed = make(chan struct{})
}

// get returns the count and a channel closed at the next add.
func (m *replaceMark) get() (uint64, <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.changed == nil {
		m.changed = make(chan struct{})
	}
	return m.n, m.changed
}

// setShard reshards the controller's Reflector, or, before it is built,
// has it built with sh.
func (c *controller) setShard(sh Shard) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reflector != nil {
		return c.reflector.SetShard(sh)
	}
	c.shard = &sh
	return nil
}

// NewSharedIndexInformerWith returns a constructor with
// NewSharedIndexInformer's signature whose informers' Reflectors are built
// with o (see ReflectorConfigurable): one line gives every informer of a
// controller-runtime cache, or of a SharedInformerFactory's InformerFor, the
// same options, for example its shard:
//
//	crcache.Options{NewInformer: cache.NewSharedIndexInformerWith(cache.ReflectorOptions{Shard: &shard})}
//
// It panics at once, with an error wrapping ErrInvalidShard, if o.Shard
// points at the zero Shard (the Shard a failed ReplicaShard, NewShard or
// ParseShard returns with its error): that is a programming error, which
// would otherwise surface only when an informer runs.
func NewSharedIndexInformerWith(o ReflectorOptions) func(clientgocache.ListerWatcher, runtime.Object, time.Duration, Indexers) SharedIndexInformer {
	if err := checkShardOption(o, "NewSharedIndexInformerWith"); err != nil {
		panic(fmt.Errorf("cache: %w", err))
	}
	return func(lw clientgocache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers Indexers) SharedIndexInformer {
		s := newSharedIndexInformer(lw, obj, SharedIndexInformerOptions{ResyncPeriod: resync, Indexers: indexers}, "NewSharedIndexInformerWith")
		s.setReflectorOptions(o)
		return s
	}
}
