package cache

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgocache "k8s.io/client-go/tools/cache"
)

var _ Resharder = &sharedIndexInformer{}

// SetShard sets the informer's shard (see ReflectorOptions.Shard and
// Reflector.SetShard). Before Run it makes the informer a sharded one; while
// it runs it reshards: the Reflector relists with the new selector and
// handlers see objects that left the shard deleted and objects that entered
// it added. While running, an informer started unsharded fails with
// ErrNotSharded. The zero Shard fails with ErrInvalidShard.
func (s *sharedIndexInformer) SetShard(sh Shard) error {
	if sh.IsZero() {
		return (&Reflector{}).SetShard(sh)
	}
	err := s.beforeStart(func() {
		var o ReflectorOptions
		if s.reflectorOptions != nil {
			o = *s.reflectorOptions
		}
		o.Shard = &sh
		s.reflectorOptions = &o
	})
	if err != errStarted {
		return err
	}
	s.mu.Lock()
	ctrl := s.ctrl
	s.mu.Unlock()
	return ctrl.setShard(sh)
}

// WaitForShard blocks until the informer's Reflector has synced with
// shard s (see Reflector.WaitForShard), or ctx ends; the indexer then
// holds s's objects once the queue has handed that sync over.
func (s *sharedIndexInformer) WaitForShard(ctx context.Context, sh Shard) error {
	select {
	case <-s.reflectorBuilt:
	case <-ctx.Done():
		return fmt.Errorf("%w with shard %s: %w", ErrNotSynced, sh, ctx.Err())
	}
	s.mu.Lock()
	ctrl := s.ctrl
	s.mu.Unlock()
	ctrl.mu.RLock()
	r := ctrl.reflector
	ctrl.mu.RUnlock()
	return r.WaitForShard(ctx, sh)
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
func NewSharedIndexInformerWith(o ReflectorOptions) func(clientgocache.ListerWatcher, runtime.Object, time.Duration, Indexers) SharedIndexInformer {
	return func(lw clientgocache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers Indexers) SharedIndexInformer {
		s := newSharedIndexInformer(lw, obj, SharedIndexInformerOptions{ResyncPeriod: resync, Indexers: indexers}, "NewSharedIndexInformerWith")
		opts := o
		s.reflectorOptions = &opts
		return s
	}
}
