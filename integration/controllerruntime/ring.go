package controllerruntime

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kreflector/cache/ring"
)

// AddRing adds r to mgr to run on every replica, started together with
// the manager's caches instead of after them. mgr.Add(r) is enough (r's
// NeedLeaderElection is false) when the ring's informers are only made by
// controllers as they start; but the manager starts plain runnables only
// once its caches have synced, and a ring informer cannot sync before the
// ring has planned this replica's buckets, so an informer made before
// mgr.Start (by mgr.GetFieldIndexer().IndexField, or GetInformer) would
// hold the manager's start forever under mgr.Add(r). AddRing registers r
// as a runnable of the caches' group (it reports mgr.GetCache() as its
// cache, so the manager's readiness check for it is the caches' own). The
// ring logs through the manager's logger (named "ring").
//
// A ring that cannot work (its Lease calls refused, for want of the Role
// docs/sharding.md gives, say) never plans this replica's buckets, so its
// informers never sync, and the controllers would give up after their
// cache sync timeout with only "timed out waiting for cache to be synced".
// So if the ring is not ready (or is fenced) shortly before that timeout
// (the manager's Controller.CacheSyncTimeout, 2 minutes if unset, as
// controller-runtime's default, less a tenth of it, at most 10 s), the
// runnable stops the ring and returns the ring's WaitForSync error, which
// the manager then ends with: it says why and wraps ring.ErrNotFormed and
// the ring's last error (apierrors.IsForbidden works on it). A ring that
// is ready and waits for other members to release buckets is left to it.
// If the manager is still waiting for its caches then (an informer made
// before Start waits for the ring), returning would not end it
// (controller-runtime waits for its caches with no timeout, heeding no
// context): the error is logged instead, the ring goes on trying, and the
// manager's liveness check fails with that error until the ring forms.
//
// AddRing adds two checks to the manager's probes, both named "ring-"
// and the replica's Lease name (see Ring.LeaseName):
//   - a readiness check (/readyz) that fails, with the ring's status,
//     while this replica has not cached its share or is fenced, so that a
//     rolling update waits for a new replica to join before it stops the
//     next old one;
//   - a liveness check (/healthz) that fails with the error above from the
//     moment it is logged until the ring forms, so that the kubelet
//     restarts a replica that would otherwise wait forever (kubebuilder's
//     scaffold probes /healthz), as the manager's end would.
func AddRing(mgr manager.Manager, r *ring.Ring) error {
	c := &cachesStarted{ch: make(chan struct{})}
	if err := mgr.Add(c); err != nil {
		return err
	}
	rc := &ringWithCaches{
		Ring:          r,
		cache:         mgr.GetCache(),
		giveUp:        giveUpAfter(mgr.GetControllerOptions().CacheSyncTimeout),
		cachesStarted: c.ch,
		log:           mgr.GetLogger().WithName("ring"),
	}
	name := "ring-" + r.LeaseName()
	if err := mgr.AddReadyzCheck(name, rc.joined); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck(name, rc.alive); err != nil {
		return err
	}
	return mgr.Add(rc)
}

// giveUpAfter is how long AddRing's runnable gives a ring to become ready,
// given the controllers' cache sync timeout t: t (2 minutes if not
// positive) less a tenth of it, at most 10 s, so that the ring's error
// reaches the manager before a controller's does.
func giveUpAfter(t time.Duration) time.Duration {
	if t <= 0 {
		t = 2 * time.Minute
	}
	return t - min(t/10, 10*time.Second)
}

// ringWithCaches is a ring as a runnable of the manager's caches' group.
type ringWithCaches struct {
	*ring.Ring
	cache  crcache.Cache
	giveUp time.Duration
	// cachesStarted is closed once the manager has started its caches and
	// gone on to its other runnables.
	cachesStarted <-chan struct{}
	log           logr.Logger
	// stuck is the error check logged while the manager waited for its
	// caches, until the ring forms; nil otherwise.
	stuck atomic.Pointer[error]
}

// joined is the readiness check: nil once this replica has cached its
// share of the ring and while it is not fenced.
func (r *ringWithCaches) joined(*http.Request) error {
	if s := r.Ring.Status(); !s.Ready || s.Fenced {
		return fmt.Errorf("not joined: %s", s)
	}
	return nil
}

// alive is the liveness check: the error check logged, while the manager
// waits for its caches and the ring has not formed since.
func (r *ringWithCaches) alive(*http.Request) error {
	if err := r.stuck.Load(); err != nil {
		return *err
	}
	return nil
}

// GetCache makes the manager start the ring with its caches.
func (r *ringWithCaches) GetCache() crcache.Cache { return r.cache }

// Start runs the ring until ctx ends, or until it has been found unable to
// work (see AddRing): it then stops it, waits for it to leave, and
// returns why.
func (r *ringWithCaches) Start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(logr.NewContext(ctx, r.log))
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- r.Ring.Run(ctx) }()
	if err := r.check(ctx); err != nil {
		cancel()
		<-ran
		return err
	}
	return <-ran
}

// check waits until the ring is formed, or giveUp has passed, or ctx ends.
// It returns the ring's error if by giveUp the ring is not ready or is
// fenced and the manager has started its caches; otherwise nil. If the
// manager is still waiting for its caches then, it logs the error, fails
// the liveness check with it, and waits for the ring to form (or ctx to
// end) before it returns nil.
func (r *ringWithCaches) check(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(ctx, r.giveUp)
	defer cancel()
	err := r.Ring.WaitForSync(wctx)
	if err == nil || ctx.Err() != nil {
		return nil
	}
	if s := r.Ring.Status(); s.Ready && !s.Fenced {
		return nil
	}
	err = fmt.Errorf("ring %s cannot work after %v, and the controllers' caches wait for it: %w", r.Ring.LeaseName(), r.giveUp, err)
	select {
	case <-r.cachesStarted:
		return err
	default:
		r.log.Error(err, "The manager waits for its caches, which wait for the ring; the ring goes on trying, and the liveness check fails meanwhile")
		r.stuck.Store(&err)
		if r.Ring.WaitForSync(ctx) == nil {
			r.stuck.Store(nil)
		}
		return nil
	}
}

// cachesStarted is a runnable of the manager's group that starts once its
// caches have started (not needing leader election): it closes ch.
type cachesStarted struct {
	ch   chan struct{}
	once sync.Once
}

// Start closes ch and returns when ctx ends.
func (c *cachesStarted) Start(ctx context.Context) error {
	c.once.Do(func() { close(c.ch) })
	<-ctx.Done()
	return nil
}

// NeedLeaderElection is false: the runnable starts with the manager's
// other runnables that need none, right after the caches.
func (c *cachesStarted) NeedLeaderElection() bool { return false }
