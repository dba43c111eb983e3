package ring

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache/cachetest"
)

// rig is a ring test's world: one fake API server holding ConfigMaps, one
// fake clientset holding the ring's Leases, replicas joining and leaving,
// and a sampler that checks at every tick that no object is handled by two
// replicas and measures how long each went without one.
type rig struct {
	t       *testing.T
	ctx     context.Context
	srv     *cachetest.Server
	cms     *cachetest.Resource
	leases  *fake.Clientset
	objects []runtime.Object

	mu       sync.Mutex
	replicas map[string]*replica
	// unowned is how long each object has been without a handler now;
	// longest the longest such stretch seen, and twice counts samples with
	// an object handled by two replicas.
	unowned map[string]time.Duration
	longest time.Duration
	twice   int
}

// replica is one member: its ring, its informer, its handler's log and
// the switch that black-holes its Lease calls.
type replica struct {
	name   string
	ring   *Ring
	inf    *Informer
	cancel context.CancelFunc
	done   chan struct{}
	holes  *blackHole

	mu   sync.Mutex
	adds map[string]int
}

const (
	tick       = 100 * time.Millisecond
	rigBuckets = 64
)

func objName(obj runtime.Object) string { return obj.(*corev1.ConfigMap).Name }

func newRig(t *testing.T, ctx context.Context, objects int) *rig {
	return newRigWith(t, ctx, objects, cachetest.Options{}, 1)
}

// newRigWith serves objects ConfigMaps spread over namespaces namespaces
// from a server with opts.
func newRigWith(t *testing.T, ctx context.Context, objects int, opts cachetest.Options, namespaces int) *rig {
	srv := cachetest.NewServer(opts)
	t.Cleanup(srv.Close)
	cms := srv.Resource(cachetest.Type{Resource: "configmaps", Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}})
	g := &rig{t: t, ctx: ctx, srv: srv, cms: cms, leases: fake.NewClientset(), replicas: map[string]*replica{}, unowned: map[string]time.Duration{}}
	t.Cleanup(g.stopAll)
	for i := range objects {
		obj, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: nsName(i % namespaces), Name: fmt.Sprintf("cm-%04d", i)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		g.objects = append(g.objects, obj)
	}
	return g
}

// join starts a replica named name.
func (g *rig) join(name string) *replica { return g.joinWith(name, nil, nil) }

// joinWith starts a replica named name with its Config changed by
// configure and, besides the handler recording adds, handler h.
func (g *rig) joinWith(name string, configure func(*Config), h clientgocache.ResourceEventHandler) *replica {
	g.t.Helper()
	rp := &replica{name: name, done: make(chan struct{}), holes: &blackHole{}, adds: map[string]int{}}
	cfg := Config{Client: rp.holes.wrap(g.leases.CoordinationV1()), Namespace: "ring", Name: "test", Identity: name, Buckets: rigBuckets}
	if configure != nil {
		configure(&cfg)
	}
	r, err := New(cfg)
	if err != nil {
		g.t.Fatal(err)
	}
	rp.ring = r
	rp.inf = r.NewInformer(g.cms.Namespace(""), &corev1.ConfigMap{}, 0, clientgocache.Indexers{}).(*Informer)
	if _, err := rp.inf.AddEventHandler(clientgocache.ResourceEventHandlerFuncs{AddFunc: rp.added}); err != nil {
		g.t.Fatal(err)
	}
	if h != nil {
		if _, err := rp.inf.AddEventHandler(h); err != nil {
			g.t.Fatal(err)
		}
	}
	g.run(rp)
	return rp
}

// startRing runs an already built ring as replica name, with an informer.
func (g *rig) startRing(name string, r *Ring) *replica {
	return g.startRingOn(name, r, g.cms.Namespace(""))
}

// startRingOn runs an already built ring as replica name, with an
// informer over lw.
func (g *rig) startRingOn(name string, r *Ring, lw clientgocache.ListerWatcher) *replica {
	rp := &replica{name: name, ring: r, done: make(chan struct{}), holes: &blackHole{}, adds: map[string]int{}}
	rp.inf = r.NewInformer(lw, &corev1.ConfigMap{}, 0, clientgocache.Indexers{}).(*Informer)
	if _, err := rp.inf.AddEventHandler(clientgocache.ResourceEventHandlerFuncs{AddFunc: rp.added}); err != nil {
		g.t.Fatal(err)
	}
	g.run(rp)
	return rp
}

// run starts rp's ring and informer and registers it.
func (g *rig) run(rp *replica) {
	r := rp.ring
	name := rp.name
	ctx, cancel := context.WithCancel(g.ctx)
	rp.cancel = cancel
	go func() {
		defer close(rp.done)
		var wg sync.WaitGroup
		wg.Go(func() { rp.inf.RunWithContext(ctx) })
		_ = r.Run(ctx)
		wg.Wait()
	}()
	g.mu.Lock()
	g.replicas[name] = rp
	g.mu.Unlock()
}

func (rp *replica) added(obj interface{}) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	rp.adds[obj.(*corev1.ConfigMap).Name]++
}

// leave stops a replica gracefully and waits until it has left.
func (g *rig) leave(name string) {
	g.mu.Lock()
	rp := g.replicas[name]
	delete(g.replicas, name)
	g.mu.Unlock()
	rp.cancel()
	g.sampleUntil(rp.done)
}

// sampleUntil samples every tick until done is closed.
func (g *rig) sampleUntil(done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case <-time.After(tick):
			g.sample()
		}
	}
}

// sample checks the handling of every object at this instant.
func (g *rig) sample() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, obj := range g.objects {
		name := obj.(*corev1.ConfigMap).Name
		n := 0
		for _, rp := range g.replicas {
			if rp.ring.Handles(obj) {
				n++
			}
		}
		if n > 1 {
			g.twice++
		}
		if n == 0 {
			g.unowned[name] += tick
			g.longest = max(g.longest, g.unowned[name])
		} else {
			g.unowned[name] = 0
		}
	}
}

// sampleFor samples every tick for d.
func (g *rig) sampleFor(d time.Duration) {
	for range int(d / tick) {
		time.Sleep(tick)
		g.sample()
	}
}

// handlers returns how many objects each replica handles now.
func (g *rig) handlers() map[string]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string]int{}
	for _, obj := range g.objects {
		for name, rp := range g.replicas {
			if rp.ring.Handles(obj) {
				out[name]++
			}
		}
	}
	return out
}

// blackHole makes a replica's Lease calls hang until their context ends,
// as a connection that stays open and silent does; once it is turned off,
// the calls hanging go through, as the network's retransmissions do.
type blackHole struct {
	mu     sync.Mutex
	on     bool
	healed chan struct{} // closed when turned off
}

func (b *blackHole) set(on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case on && !b.on:
		b.healed = make(chan struct{})
	case !on && b.on:
		close(b.healed)
	}
	b.on = on
}

func (b *blackHole) hang(ctx context.Context) error {
	b.mu.Lock()
	on, healed := b.on, b.healed
	b.mu.Unlock()
	if !on {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-healed:
		return nil
	}
}

func (b *blackHole) wrap(c coordinationv1client.LeasesGetter) coordinationv1client.LeasesGetter {
	return wrapLeases(c, func(l coordinationv1client.LeaseInterface) coordinationv1client.LeaseInterface {
		return holeLeases{LeaseInterface: l, b: b}
	})
}

// wrapLeases returns c with each namespace's Lease interface wrapped by
// wrap: the tests' faults sit in front of the fake clientset this way.
func wrapLeases(c coordinationv1client.LeasesGetter, wrap func(coordinationv1client.LeaseInterface) coordinationv1client.LeaseInterface) coordinationv1client.LeasesGetter {
	return wrappedLeases{c: c, wrap: wrap}
}

type wrappedLeases struct {
	c    coordinationv1client.LeasesGetter
	wrap func(coordinationv1client.LeaseInterface) coordinationv1client.LeaseInterface
}

func (w wrappedLeases) Leases(ns string) coordinationv1client.LeaseInterface {
	return w.wrap(w.c.Leases(ns))
}

type holeLeases struct {
	coordinationv1client.LeaseInterface
	b *blackHole
}

func (h holeLeases) Create(ctx context.Context, l *coordinationv1.Lease, o metav1.CreateOptions) (*coordinationv1.Lease, error) {
	if err := h.b.hang(ctx); err != nil {
		return nil, err
	}
	return h.LeaseInterface.Create(ctx, l, o)
}

func (h holeLeases) Update(ctx context.Context, l *coordinationv1.Lease, o metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if err := h.b.hang(ctx); err != nil {
		return nil, err
	}
	return h.LeaseInterface.Update(ctx, l, o)
}

func (h holeLeases) Get(ctx context.Context, name string, o metav1.GetOptions) (*coordinationv1.Lease, error) {
	if err := h.b.hang(ctx); err != nil {
		return nil, err
	}
	return h.LeaseInterface.Get(ctx, name, o)
}

func (h holeLeases) List(ctx context.Context, o metav1.ListOptions) (*coordinationv1.LeaseList, error) {
	if err := h.b.hang(ctx); err != nil {
		return nil, err
	}
	return h.LeaseInterface.List(ctx, o)
}

func (h holeLeases) Delete(ctx context.Context, name string, o metav1.DeleteOptions) error {
	if err := h.b.hang(ctx); err != nil {
		return err
	}
	return h.LeaseInterface.Delete(ctx, name, o)
}

// kill ends a replica as SIGKILL does: from now on it handles nothing and
// says nothing; its Lease stays until the others expire it.
func (g *rig) kill(name string) {
	g.mu.Lock()
	rp := g.replicas[name]
	delete(g.replicas, name)
	g.mu.Unlock()
	rp.holes.set(true)
	rp.cancel()
	g.t.Cleanup(func() { <-rp.done })
}

// nsName names namespace i. The server hashes namespaces with plain
// FNV-1a, whose top bits spread short names that differ in one digit
// poorly (ns-0 … ns-29 fall in 2 of 64 buckets), so the names differ
// throughout.
func nsName(i int) string { return fmt.Sprintf("ns-%016x", mix(uint64(i)+1)) }

// inBubble runs f in a synctest bubble with a context that ends with it.
func inBubble(t *testing.T, f func(t *testing.T, ctx context.Context)) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		f(t, ctx)
	})
}

// joinAll starts the replicas named.
func (g *rig) joinAll(names ...string) {
	for _, n := range names {
		g.join(n)
	}
}

// stopAll ends the replicas still registered and waits for them, so that
// a test that fails half-way leaves no goroutine in its bubble.
func (g *rig) stopAll() {
	g.mu.Lock()
	running := make([]*replica, 0, len(g.replicas))
	for _, rp := range g.replicas {
		running = append(running, rp)
	}
	g.mu.Unlock()
	for _, rp := range running {
		rp.holes.set(false)
		rp.cancel()
	}
	for _, rp := range running {
		<-rp.done
	}
}

// leaveAll has every replica still running leave, in name order.
func (g *rig) leaveAll() {
	g.mu.Lock()
	names := make([]string, 0, len(g.replicas))
	for n := range g.replicas {
		names = append(names, n)
	}
	g.mu.Unlock()
	slices.Sort(names)
	for _, n := range names {
		g.leave(n)
	}
}
