package ring

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgocache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/shard"
)

// Informer is a shared index informer of this package's root whose cache
// follows the ring: it caches the buckets this replica owns, acquires or
// releases, and delivers events to its handlers only for the buckets it
// holds the handling right for. Make one with Ring.NewInformer.
//
// Handlers see:
//   - events of held buckets, as any informer delivers them;
//   - on acquiring buckets, the deletes of them that happened during the
//     handoff, then an add (isInInitialList false) for every object of
//     them in the cache, in order with the informer's own calls: the adds
//     show the cache at one point of the informer's stream, so per object
//     a handler sees versions in order, and nothing after a delete but an
//     add of a newer object;
//   - on releasing, nothing: no delete, since the objects still exist and
//     another replica now handles them. A reconciler that queued a key
//     before the release asks HandlesKey before acting on it.
type Informer struct {
	clientgocache.SharedIndexInformer
	ring *Ring
	// lw is the informer's ListerWatcher, for replays (see replay); key
	// names its type in the positions members publish.
	lw  clientgocache.ListerWatcher
	key string

	// opening orders adding a handler against queueing an opening, so
	// that every handler either sees a bucket open when it is made or is
	// handed the opening.
	opening  sync.Mutex
	mu       sync.Mutex
	handlers map[clientgocache.ResourceEventHandlerRegistration]*gatedHandler
	running  bool
	// ended is set when Run returns: the informer counts no more.
	ended bool
	// done is Run's context's Done channel once Run has started: closed,
	// the informer may have dropped notifications already.
	done  <-chan struct{}
	shard cacheShard
}

// cacheShard is the shard an informer was last given, if any.
type cacheShard struct {
	set set
	ok  bool
}

// NewInformer has client-go's NewSharedIndexInformer signature (and
// controller-runtime's cache.Options.NewInformer type): one line makes
// every informer of a controller-runtime cache or of a SharedInformerFactory
// (through InformerFor) a ring informer. The informer starts listing once
// the ring has planned this replica's buckets, filters locally if the
// server ignores shard selectors (said in Status), and is resharded as
// buckets move.
func (r *Ring) NewInformer(lw clientgocache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers clientgocache.Indexers) clientgocache.SharedIndexInformer {
	inf := &Informer{
		SharedIndexInformer: cache.NewSharedIndexInformer(lw, obj, resync, indexers),
		ring:                r,
		lw:                  lw,
		key:                 typeKey(obj),
		handlers:            map[clientgocache.ResourceEventHandlerRegistration]*gatedHandler{},
	}
	r.reg.add(inf)
	return inf
}

// Run waits until the ring has planned this replica's buckets, then runs
// the informer with them as its shard until stopCh closes.
func (i *Informer) Run(stopCh <-chan struct{}) {
	i.RunWithContext(wait.ContextForChannel(stopCh))
}

// RunWithContext is Run until ctx ends. An informer that stops before it
// has synced while its ring is not formed logs the ring's cause
// (Status.Err) at error level, through ctx's logger: a caller whose own
// wait only says "timed out" stops it, and this says why, as the root's
// informers log their last list/watch error.
func (i *Informer) RunWithContext(ctx context.Context) {
	defer i.stopped()
	defer i.logUnformed(klog.FromContext(ctx))
	if !i.ring.reg.start(ctx, i) {
		// Run the root informer with the ended context all the same: it
		// returns at once, stopped, so that its WaitForSync and Health
		// say it stopped.
		i.SharedIndexInformer.RunWithContext(ctx)
		return
	}
	i.SharedIndexInformer.RunWithContext(ctx)
}

// logUnformed logs, if the informer has not synced and the ring is not
// formed, why the ring is not.
func (i *Informer) logUnformed(logger klog.Logger) {
	if i.HasSynced() {
		return
	}
	if err := i.ring.Status().Err(); err != nil {
		logger.Error(err, "Ring informer stopped before its ring formed", "type", i.key)
	}
}

// stopped takes a stopped informer out of the ring's reckoning: the ring
// no longer waits for its cache before publishing what it has cached.
func (i *Informer) stopped() {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.running, i.ended = false, true
}

// AddEventHandler registers h behind the ring's handling gate.
func (i *Informer) AddEventHandler(h clientgocache.ResourceEventHandler) (clientgocache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandlerWithOptions(h, clientgocache.HandlerOptions{})
}

// AddEventHandlerWithResyncPeriod registers h behind the gate.
func (i *Informer) AddEventHandlerWithResyncPeriod(h clientgocache.ResourceEventHandler, p time.Duration) (clientgocache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandlerWithOptions(h, clientgocache.HandlerOptions{ResyncPeriod: &p})
}

// AddEventHandlerWithOptions registers h behind the gate.
func (i *Informer) AddEventHandlerWithOptions(h clientgocache.ResourceEventHandler, o clientgocache.HandlerOptions) (clientgocache.ResourceEventHandlerRegistration, error) {
	i.opening.Lock()
	defer i.opening.Unlock()
	g := newGatedHandler(i.ring, h)
	reg, err := i.SharedIndexInformer.AddEventHandlerWithOptions(g, o)
	if err != nil {
		return nil, err
	}
	i.mu.Lock()
	i.handlers[reg] = g
	i.mu.Unlock()
	return reg, nil
}

// RemoveEventHandler removes a handler added through this informer.
func (i *Informer) RemoveEventHandler(reg clientgocache.ResourceEventHandlerRegistration) error {
	i.mu.Lock()
	delete(i.handlers, reg)
	i.mu.Unlock()
	return i.SharedIndexInformer.RemoveEventHandler(reg)
}

// HandlesKey says whether this replica handles the object the informer
// caches under key ("namespace/name"): for a namespace-keyed ring, by the
// key's namespace; otherwise by the cached object's uid (false when the
// object is not in the cache).
func (i *Informer) HandlesKey(key string) bool {
	if i.ring.cfg.Key != shard.ByNamespace {
		obj, ok, err := i.GetIndexer().GetByKey(key)
		return err == nil && ok && i.ring.Handles(obj)
	}
	ns, _, err := clientgocache.SplitMetaNamespaceKey(key)
	if err != nil {
		return false
	}
	return i.ring.gate.handles(bucketOf(hashString(ns), i.ring.cfg.Buckets))
}

// Handles says whether this replica handles obj (an object, or a
// DeletedFinalStateUnknown holding one) now; it is Ring.Handles, for code
// that holds the informer and not the ring.
func (i *Informer) Handles(obj interface{}) bool { return i.ring.Handles(obj) }

var _ cache.InformerHealthReporter = &Informer{}

// reporter is the root informer's own health API.
func (i *Informer) reporter() cache.InformerHealthReporter {
	return i.SharedIndexInformer.(cache.InformerHealthReporter)
}

// WaitForSync blocks until the ring is formed (this replica handles all
// the buckets the ring plans for it) and the informer has synced (nil),
// or ctx ends, or the informer stops without having synced (at once if it
// already has; the error then wraps cache.ErrStopped). The error wraps, when the ring is not formed, the
// ring's (Ring.WaitForSync: ErrNotFormed and the ring's last error, so
// apierrors.IsForbidden works for forbidden Leases; its Status says
// whether Run was called, whether it is fenced or not ready, whom it
// waits for), and, when the informer has not synced, the informer's own
// WaitForSync error (cache.ErrNotSynced with the last list/watch error):
// a ring that cannot form because its informer cannot list says both.
func (i *Informer) WaitForSync(ctx context.Context) error {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	inf := make(chan error, 1)
	go func() {
		err := i.reporter().WaitForSync(ctx)
		if errors.Is(err, cache.ErrStopped) {
			cancel() // nothing will make it sync: stop waiting for the ring
		}
		inf <- err
	}()
	ringErr := i.ring.WaitForSync(rctx)
	infErr := <-inf
	switch {
	case ringErr == nil:
		return infErr
	case infErr == nil:
		return ringErr
	}
	return fmt.Errorf("%w; the informer: %w", ringErr, infErr)
}

// Health is the root informer's health (its Reflector's and its
// handlers') with the ring's standing as its Gate: while the ring is not
// formed, Gate is Status.Err (wrapping ErrNotFormed and the ring's last
// error, saying why) and Healthy is false. The Reflector has not started
// before the ring has planned this replica's buckets: it is Syncing with
// no error of its own, and Gate says what holds it back (Run never
// called, Lease calls failing).
func (i *Informer) Health() cache.InformerHealth {
	h := i.reporter().Health()
	if err := i.ring.Status().Err(); err != nil {
		h.Gate, h.Healthy = err, false
	}
	return h
}

// Stats are the root informer's figures.
func (i *Informer) Stats() cache.InformerStats { return i.reporter().Stats() }

// SetHandlerLimits sets what Health reports as a handler problem; it
// fails once the informer has started.
func (i *Informer) SetHandlerLimits(l cache.HandlerLimits) error {
	return i.reporter().SetHandlerLimits(l)
}

// Handles says whether this replica handles obj (an object, or a
// DeletedFinalStateUnknown holding one) now: whether its bucket is open.
func (r *Ring) Handles(obj interface{}) bool {
	b, ok := r.bucket(obj)
	return ok && r.gate.handles(b)
}

// bucket places obj (or the object a tombstone holds).
func (r *Ring) bucket(obj interface{}) (int, bool) {
	if t, ok := obj.(clientgocache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return 0, false
	}
	return bucketOf(r.cfg.Key.Hash(m), r.cfg.Buckets), true
}

// queueOpening queues opening o to the informer's handlers, with the
// cached objects of its buckets and the deletes replayed for them.
func (i *Informer) queueOpening(o *opening, replayed []interface{}, r *Ring) {
	i.opening.Lock()
	defer i.opening.Unlock()
	i.queuer().QueueSnapshot(func(obj interface{}) bool {
		b, ok := r.bucket(obj)
		return ok && o.set.has(b)
	}, &informerOpening{opening: o, replayed: replayed})
}

// handled returns how far every handler of i has been handed i's
// changes: the lowest position of their last marks; false if i has no
// handler or one has processed no mark yet.
func (i *Informer) handled() (uint64, bool) {
	hs := i.gated()
	if len(hs) == 0 {
		return 0, false
	}
	var low uint64
	for n, h := range hs {
		p := h.handled.Load()
		if p == nil {
			return 0, false
		}
		rv, ok := parseRV(*p)
		if !ok {
			return 0, false
		}
		if n == 0 || rv < low {
			low = rv
		}
	}
	return low, true
}

// queueMark queues a position mark to the informer's handlers.
func (i *Informer) queueMark() { i.queuer().QueueSnapshot(nil, positionMark{}) }

func (i *Informer) queuer() cache.SnapshotQueuer {
	return i.SharedIndexInformer.(cache.SnapshotQueuer)
}
