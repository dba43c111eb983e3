package controllerruntime

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	clientgocache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kreflector/cache/ring"
	"github.com/kreflector/cache/shard"
)

// Elastic puts controller-runtime controllers on an elastic ring
// (github.com/kreflector/cache/ring). With the manager's cache built by
// the ring (crcache.Options{NewInformer: r.NewInformer}) a controller's
// handlers only see the objects of buckets this replica handles; what
// Elastic adds is the part of a handover that happens after an event was
// queued:
//
//   - its Reconciler drops a request whose object this replica does not
//     handle when the request is dequeued (released since it was queued);
//   - its Drain, set as ring.Config.Drain, holds a release back until the
//     reconciles in progress for objects of the released buckets have
//     returned, so the next owner never works on an object this replica
//     is still working on.
//
// One Elastic may serve every controller of a manager. Make it before the
// ring (the ring's Config takes its Drain) and wrap each reconciler:
//
//	e := controllerruntime.NewElastic()
//	r, err := ring.New(ring.Config{..., Drain: e.Drain})
//	mgr, err := manager.New(cfg, manager.Options{Cache: crcache.Options{NewInformer: r.NewInformer}})
//	err = controllerruntime.AddRing(mgr, r)
//	err = builder.ControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Complete(e.Reconciler(mgr, &corev1.ConfigMap{}, inner))
//
// Why Drain cannot look at the controller's workqueue instead: the
// workqueue is built and owned inside controller-runtime's Controller,
// which exposes neither its contents nor its in-flight set (a custom
// NewQueue sees only Add/Get/Done of opaque requests and not which of
// them a worker holds across a release); and waiting for queued keys
// would be wrong anyway, since the queued requests of a released bucket
// are exactly the ones to drop, not to wait for. What must be waited for
// is the reconciles already past the check, and the Reconciler knows
// those.
type Elastic struct {
	mu      sync.Mutex
	flights map[*flight]struct{}
	// landed is closed, and replaced, each time a flight ends.
	landed chan struct{}
}

// flight is one reconcile in progress through an Elastic's Reconciler.
type flight struct {
	// obj is the object the reconcile decided on; nil while it is being
	// looked up, and for an object the server no longer has.
	obj runtime.Object
}

// NewElastic returns an Elastic with no reconcile in progress.
func NewElastic() *Elastic {
	return &Elastic{flights: map[*flight]struct{}{}, landed: make(chan struct{})}
}

// Drain has ring.Config.Drain's signature: it returns nil once no
// reconcile started through e's Reconcilers is in progress for an object
// of released (or for an object not yet looked up or already deleted,
// which might be), or ctx's error when ctx ends first; the ring then
// keeps the buckets closed and tries the release again next round. The
// ring calls it after closing its gate to the released buckets, so no
// new reconcile of theirs starts meanwhile. A reconcile that never
// returns holds the release back until the renew deadline, when the ring
// fences itself.
func (e *Elastic) Drain(ctx context.Context, released shard.Shard) error {
	for {
		e.mu.Lock()
		busy := 0
		for f := range e.flights {
			if f.obj == nil {
				busy++
				continue
			}
			if in, err := released.Contains(f.obj); err != nil || in {
				busy++
			}
		}
		landed := e.landed
		e.mu.Unlock()
		if busy == 0 {
			return nil
		}
		select {
		case <-landed:
		case <-ctx.Done():
			return fmt.Errorf("%d reconciles of %s still in progress: %w", busy, released, ctx.Err())
		}
	}
}

// Reconciler returns inner behind the ring for the controller whose For
// type is obj's: each request is passed to inner only if this replica
// handles its object when the request is dequeued, decided on
//
//   - the object in the manager's cache, if it is there: passed if the
//     ring handles it now (ring.Informer.Handles);
//   - otherwise the object read from the API server (mgr.GetAPIReader()),
//     since the cache no longer holds a released bucket's objects:
//     passed if the ring handles it now; if the server has no such
//     object (deleted), passed, because the delete was delivered only to
//     the replica handling it then (a deleted object's request may
//     still reach inner on a former owner too if it was queued there
//     before a handover: reconciling a deleted object must be idempotent,
//     as it usually is with controller-runtime's NotFound handling);
//     another error of the read is returned, so the request is retried.
//
// A dropped request returns an empty Result and no error, so the
// workqueue forgets it; the replica that handles the object now has its
// own request for it (from the add the ring delivers on acquiring a
// bucket). The cache's informer for obj must be a ring informer (built by
// r.NewInformer); otherwise every request fails with an error saying so.
func (e *Elastic) Reconciler(mgr manager.Manager, obj client.Object, inner reconcile.Reconciler) reconcile.Reconciler {
	informers := mgr.GetCache()
	lookup := func(ctx context.Context) (ringInformer, error) {
		inf, err := informers.GetInformer(ctx, obj, crcache.BlockUntilSynced(false))
		if err != nil {
			return nil, err
		}
		ri, ok := inf.(ringInformer)
		if !ok {
			return nil, fmt.Errorf("the cache's informer for %T is a %T, not a ring informer: build the manager's cache with crcache.Options{NewInformer: r.NewInformer}", obj, inf)
		}
		return ri, nil
	}
	return &elasticReconciler{e: e, lookup: lookup, reader: mgr.GetAPIReader(), obj: obj, inner: inner}
}

// ringInformer is what Reconciler needs of the cache's informer:
// *ring.Informer has it, whether controller-runtime returns it as is (as
// for a cache of one namespace or all) or behind an interface.
type ringInformer interface {
	Handles(obj interface{}) bool
	GetIndexer() clientgocache.Indexer
}

var _ ringInformer = &ring.Informer{}

type elasticReconciler struct {
	e      *Elastic
	lookup func(context.Context) (ringInformer, error)
	reader client.Reader
	obj    client.Object
	inner  reconcile.Reconciler
}

func (r *elasticReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	f := r.e.takeOff()
	defer r.e.land(f)
	inf, err := r.lookup(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	obj, err := r.current(ctx, inf, req)
	if err != nil {
		return reconcile.Result{}, err
	}
	r.e.decided(f, obj)
	if obj != nil && !inf.Handles(obj) {
		log.FromContext(ctx).V(1).Info("dropping the request: this replica no longer handles the object", "object", req.NamespacedName)
		return reconcile.Result{}, nil
	}
	return r.inner.Reconcile(ctx, req)
}

// current returns req's object from the cache, else from the server;
// nil if the server has none.
func (r *elasticReconciler) current(ctx context.Context, inf ringInformer, req reconcile.Request) (runtime.Object, error) {
	key := req.Name
	if req.Namespace != "" {
		key = req.Namespace + "/" + req.Name
	}
	if obj, ok, err := inf.GetIndexer().GetByKey(key); err == nil && ok {
		return obj.(runtime.Object), nil
	}
	live := r.obj.DeepCopyObject().(client.Object)
	switch err := r.reader.Get(ctx, req.NamespacedName, live); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading %s to know whether this replica handles it: %w", req.NamespacedName, err)
	}
	return live, nil
}

// takeOff records a reconcile starting, before it checks the ring: a
// Drain that begins after the check passed sees it.
func (e *Elastic) takeOff() *flight {
	f := &flight{}
	e.mu.Lock()
	e.flights[f] = struct{}{}
	e.mu.Unlock()
	return f
}

// decided records the object f decided on.
func (e *Elastic) decided(f *flight, obj runtime.Object) {
	e.mu.Lock()
	f.obj = obj
	e.mu.Unlock()
}

// land records f's end and wakes Drain.
func (e *Elastic) land(f *flight) {
	e.mu.Lock()
	delete(e.flights, f)
	close(e.landed)
	e.landed = make(chan struct{})
	e.mu.Unlock()
}
