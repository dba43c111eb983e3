package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/ring"
)

// replica is one member of the ring, as one pod of a controller would be:
// its own clientset over its own line to the server, its ring membership,
// and a ring informer over ConfigMaps with a handler that counts its calls.
type replica struct {
	name string
	ring *ring.Ring
	line *line
	// cancel ends the replica's context: a graceful leave.
	cancel context.CancelFunc
	done   chan struct{}

	// calls counts handler calls, by kind; twice those made while another
	// replica also handled the object.
	calls kindCounts
	twice atomic.Int64
	// killed is when the replica was killed (nil while alive), dead set
	// from then on; gone is set once it was killed or asked to leave.
	killed     atomic.Pointer[time.Time]
	dead, gone atomic.Bool
	// fences counts the times the sampler saw the replica fenced while
	// it was alive: it could not renew its Lease within RenewDeadline.
	fences atomic.Int64
	// wasFenced is the sampler's: whether its last sample saw it fenced.
	wasFenced bool
	// fencedAfter is how long after the kill the replica was first seen
	// handling nothing (0 until then); callsAfterFence counts handler
	// calls it made after that.
	fencedAfter     atomic.Int64
	callsAfterFence atomic.Int64
}

// fleet is the replicas of the process, in the order they joined.
type fleet struct {
	cfg  *rest.Config
	opts ringOptions
	all  atomic.Pointer[[]*replica]
	wg   sync.WaitGroup
}

// ringOptions are the settings every member shares.
type ringOptions struct {
	leaseDuration, renewDeadline, retryPeriod time.Duration
	buckets                                   int
}

func (f *fleet) replicas() []*replica {
	if p := f.all.Load(); p != nil {
		return *p
	}
	return nil
}

// alive returns the replicas neither killed nor asked to leave.
func (f *fleet) alive() []*replica {
	var out []*replica
	for _, rp := range f.replicas() {
		if !rp.gone.Load() {
			out = append(out, rp)
		}
	}
	return out
}

func (f *fleet) byName(name string) *replica {
	for _, rp := range f.replicas() {
		if rp.name == name {
			return rp
		}
	}
	panic("no replica " + name)
}

// join starts a replica named name under ctx.
func (f *fleet) join(ctx context.Context, name string) error {
	rp := &replica{name: name, done: make(chan struct{})}
	cfg := rest.CopyConfig(f.cfg)
	rp.line = newLine(cfg.Transport)
	cfg.Transport = rp.line
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	r, err := ring.New(ring.Config{
		Client:        cs.CoordinationV1(),
		Namespace:     "kube-system",
		Name:          "elastic-demo",
		Identity:      name,
		LeaseDuration: f.opts.leaseDuration,
		RenewDeadline: f.opts.renewDeadline,
		RetryPeriod:   f.opts.retryPeriod,
		Buckets:       f.opts.buckets,
	})
	if err != nil {
		return err
	}
	rp.ring = r
	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", metav1.NamespaceAll, fields.Everything())
	inf := r.NewInformer(lw, &corev1.ConfigMap{}, 0, clientgocache.Indexers{})
	_, err = inf.AddEventHandler(clientgocache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { f.handled(rp, obj, &rp.calls.adds) },
		UpdateFunc: func(old, obj interface{}) {
			n := &rp.calls.changes
			if sameVersion(old, obj) {
				n = &rp.calls.replaced
			}
			f.handled(rp, obj, n)
		},
		DeleteFunc: func(obj interface{}) { f.handled(rp, obj, &rp.calls.deletes) },
	})
	if err != nil {
		return err
	}
	rctx, cancel := context.WithCancel(replicaLogger(ctx, name, &rp.dead, "this replica was killed, its connection is silent"))
	rp.cancel = cancel
	next := append(append([]*replica(nil), f.replicas()...), rp)
	f.all.Store(&next)
	f.wg.Go(func() {
		defer close(rp.done)
		var wg sync.WaitGroup
		wg.Go(func() { inf.RunWithContext(rctx) })
		_ = r.Run(rctx)
		wg.Wait()
	})
	return nil
}

// handled is every replica's handler: it counts the call, and checks that
// no other replica handles the object at this instant while this one
// does (then both would be working on it).
func (f *fleet) handled(rp *replica, obj interface{}, kind *atomic.Int64) {
	kind.Add(1)
	if rp.fencedAfter.Load() != 0 {
		rp.callsAfterFence.Add(1)
	}
	for _, other := range f.replicas() {
		if other != rp && other.ring.Handles(obj) && rp.ring.Handles(obj) {
			rp.twice.Add(1)
		}
	}
}

// leave stops a replica gracefully: its context ends, and Ring.Run
// releases its buckets and deletes its Lease.
func (f *fleet) leave(name string) {
	rp := f.byName(name)
	rp.gone.Store(true)
	rp.cancel()
}

// kill ends a replica as SIGKILL would, as far as the others can tell:
// its line goes silent, so it neither renews its Lease nor sees events,
// and it never leaves. The process keeps running it, so the demo can
// check that it fences itself (stops handling at its renew deadline).
func (f *fleet) kill(name string) {
	rp := f.byName(name)
	now := time.Now()
	rp.killed.Store(&now)
	rp.dead.Store(true)
	rp.gone.Store(true)
	rp.line.silence()
}

// stop ends every replica and waits for them: the live ones leave
// gracefully; a killed one gives up its leave at its renew deadline.
func (f *fleet) stop() {
	for _, rp := range f.replicas() {
		rp.cancel()
	}
	f.wg.Wait()
}

// formed says whether every live replica sees the live replicas as the
// ring's members and handles exactly what the ring plans for it; if not,
// why.
func (f *fleet) formed() (bool, string) {
	alive := f.alive()
	for _, rp := range alive {
		s := rp.ring.Status()
		if !s.Formed() || s.Members != len(alive) {
			return false, s.String()
		}
	}
	return true, ""
}

// kindCounts counts a replica's handler calls by kind.
type kindCounts struct {
	// adds; replaced: updates that carry the version the cache had (a
	// relist's Replace, which each reshard makes, or a resync); changes:
	// other updates; deletes.
	adds, replaced, changes, deletes atomic.Int64
}

func (k *kindCounts) snapshot() calls {
	return calls{k.adds.Load(), k.replaced.Load(), k.changes.Load(), k.deletes.Load()}
}

// calls is a kindCounts read at one moment.
type calls struct{ adds, replaced, changes, deletes int64 }

func (c calls) total() int64 { return c.adds + c.replaced + c.changes + c.deletes }

func (c calls) minus(o calls) calls {
	return calls{c.adds - o.adds, c.replaced - o.replaced, c.changes - o.changes, c.deletes - o.deletes}
}

// sameVersion says whether an update carries the resourceVersion the
// cache already had.
func sameVersion(old, obj interface{}) bool {
	o, err1 := meta.Accessor(old)
	n, err2 := meta.Accessor(obj)
	return err1 == nil && err2 == nil && o.GetResourceVersion() == n.GetResourceVersion()
}
