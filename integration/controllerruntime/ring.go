package controllerruntime

import (
	"context"
	"errors"
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
// cache, so that the manager's start waits for it as for its caches). The
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
// context): the error is logged instead and the ring goes on trying.
//
// For that case AddRing adds a liveness check to the manager's probes
// (/healthz), named "ring-" and the replica's Lease name (see
// Ring.LeaseName): it fails, with the ring's cause, while the manager
// waits so and the ring's calls are failing, so that the kubelet restarts
// a replica that would otherwise wait forever (kubebuilder's scaffold
// probes /healthz), as the manager's end would. It passes again once the
// replica has joined, and while the ring's calls succeed (a slow first
// sync is not a reason to restart). For readiness, see Joined.
func AddRing(mgr manager.Manager, r *ring.Ring) error {
	rc := &ringWithCaches{
		Ring:   r,
		cache:  mgr.GetCache(),
		giveUp: giveUpAfter(mgr.GetControllerOptions().CacheSyncTimeout),
		log:    mgr.GetLogger().WithName("ring"),
	}
	if err := mgr.AddHealthzCheck("ring-"+r.LeaseName(), rc.alive); err != nil {
		return err
	}
	c := &cachesStarted{ch: make(chan struct{})}
	rc.cachesStarted = c.ch
	if err := mgr.Add(c); err != nil {
		return err
	}
	return mgr.Add(rc)
}

// Joined is a readiness check (healthz.Checker) for manager.AddReadyzCheck:
// it fails until this replica has cached its share of r (Status.Ready),
// so that a rolling update waits for each new replica to join before it
// stops the next old one, with the ring's Status.Err (its status, wrapping
// ring.ErrNotFormed and, while they fail, the ring's calls' error:
// apierrors.IsForbidden works on it when its Leases are forbidden), which
// controller-runtime logs with the failed check. It is not added by
// AddRing: a replica that serves a webhook its own LISTs need (the
// conversion webhook of its CRD) would never be ready, its Service having
// no endpoint while no replica is ready.
func Joined(r *ring.Ring) func(*http.Request) error {
	return func(*http.Request) error {
		if s := r.Status(); !s.Ready {
			return fmt.Errorf("not joined: %w", s.Err())
		}
		return nil
	}
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
	// stuck is set once check has logged that the manager waits for its
	// caches, which wait for the ring.
	stuck atomic.Bool
}

// alive is the liveness check: an error while the manager waits for its
// caches (stuck), the replica has not joined, and the ring's calls are
// failing.
func (r *ringWithCaches) alive(*http.Request) error {
	if !r.stuck.Load() {
		return nil
	}
	s := r.Ring.Status()
	if s.Ready && !s.Fenced || s.LastError == nil || !errors.Is(s.Err(), s.LastError) {
		return nil
	}
	return fmt.Errorf("the manager waits for its caches, which wait for ring %s, whose calls fail: %w", r.Ring.LeaseName(), s.Err())
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
	running, returned := context.WithCancel(ctx)
	go func() {
		ran <- r.Ring.Run(ctx)
		returned()
	}()
	if err := r.check(running); err != nil {
		cancel()
		<-ran
		return err
	}
	return <-ran
}

// check waits until the ring is formed, or giveUp has passed, or running
// ends (the manager stops, or Run returned: its error is Start's). It
// returns the ring's error if by giveUp the ring is not ready or is
// fenced and the manager has started its caches; otherwise nil, having
// logged the error (and let the liveness check fail) if the manager is
// still waiting for its caches.
func (r *ringWithCaches) check(running context.Context) error {
	wctx, cancel := context.WithTimeout(running, r.giveUp)
	defer cancel()
	err := r.Ring.WaitForSync(wctx)
	if err == nil || running.Err() != nil {
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
		r.log.Error(err, "The manager waits for its caches, which wait for the ring; the ring goes on trying, and the liveness check fails while its calls do")
		r.stuck.Store(true)
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
