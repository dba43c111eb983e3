package controllerruntime

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kreflector/cache/cachetest"
	"github.com/kreflector/cache/ring"
	"github.com/kreflector/cache/shard"
)

// elasticWorld is one cachetest server over HTTP serving ConfigMaps and
// Leases, the ConfigMaps created in it, and a clock of events: every
// reconcile and every gate change of every replica gets the next number.
type elasticWorld struct {
	t   *testing.T
	cfg *rest.Config
	cs  kubernetes.Interface
	// objs are the ConfigMaps by name, as created (their uids place them).
	objs map[string]*corev1.ConfigMap
	seq  atomic.Int64

	mu       sync.Mutex
	replicas []*elasticReplica
}

// elasticReplica is one replica: a ring and a manager with one ConfigMap
// controller, with what it did.
type elasticReplica struct {
	w    *elasticWorld
	id   string
	ring *ring.Ring
	mgr  manager.Manager
	done chan struct{}
	err  error

	mu sync.Mutex
	// reconciles are the calls of the inner reconciler.
	reconciles []reconciled
	// gates are the replica's gate changes (Config.OnHandlingChange).
	gates []gateChange
	// hold, while not nil, blocks the inner reconciler until closed; the
	// replica's first Drain closes it. holding counts calls blocked.
	hold    chan struct{}
	holding int
}

type reconciled struct {
	seq  int64
	name string
	v    string // the data "v" the reconciler read from its cache
}

type gateChange struct {
	seq    int64
	opened bool
	s      shard.Shard
}

func newElasticWorld(t *testing.T, n int) *elasticWorld {
	t.Helper()
	srv := cachetest.NewServer(cachetest.Options{})
	srv.Resource(cachetest.Type{Resource: "configmaps", Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}})
	srv.Resource(cachetest.Type{Group: "coordination.k8s.io", Resource: "leases", Object: &coordinationv1.Lease{}, List: &coordinationv1.LeaseList{}})
	srv.Start()
	t.Cleanup(srv.Close)
	w := &elasticWorld{t: t, cfg: srv.RESTConfig(), objs: map[string]*corev1.ConfigMap{}}
	w.cs = kubernetes.NewForConfigOrDie(w.cfg)
	for _, name := range names("cm", n) {
		cm, err := w.cs.CoreV1().ConfigMaps("team").Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w.objs[name] = cm
	}
	return w
}

// join starts a replica; wrap says whether its reconciler is behind
// Elastic's Reconciler. It stops when the test ends.
func (w *elasticWorld) join(id string, wrap bool) *elasticReplica {
	t := w.t
	t.Helper()
	rp := &elasticReplica{w: w, id: id, done: make(chan struct{})}
	e := NewElastic()
	r, err := ring.New(ring.Config{
		Client: w.cs.CoordinationV1(), Namespace: "ring", Name: "configmaps", Identity: id, Buckets: 64,
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond,
		Drain: func(ctx context.Context, released shard.Shard) error {
			rp.release()
			return e.Drain(ctx, released)
		},
		OnHandlingChange: func(opened bool, s shard.Shard) {
			rp.mu.Lock()
			defer rp.mu.Unlock()
			rp.gates = append(rp.gates, gateChange{seq: w.seq.Add(1), opened: opened, s: s})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := manager.New(w.cfg, manager.Options{
		Cache:      crcache.Options{NewInformer: r.NewInformer},
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true), CacheSyncTimeout: waitLimit},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(r); err != nil {
		t.Fatal(err)
	}
	rp.ring, rp.mgr = r, mgr
	var rec reconcile.Reconciler = reconcile.Func(rp.reconcile)
	if wrap {
		rec = e.Reconciler(mgr, &corev1.ConfigMap{}, rec)
	}
	if err := builder.ControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Named("configmaps").Complete(stamped{w: w, inner: rec}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(rp.done)
		rp.err = mgr.Start(ctx)
	}()
	t.Cleanup(func() {
		rp.release()
		cancel()
		select {
		case <-rp.done:
		case <-time.After(waitLimit):
			t.Errorf("replica %s did not stop within %v", id, waitLimit)
		}
	})
	w.mu.Lock()
	w.replicas = append(w.replicas, rp)
	w.mu.Unlock()
	return rp
}

// reconcile is the inner reconciler: it records the call with the
// ConfigMap's "v" as this replica's cache has it, and blocks while held.
func (rp *elasticReplica) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var cm corev1.ConfigMap
	v := ""
	if err := rp.mgr.GetClient().Get(ctx, req.NamespacedName, &cm); err == nil {
		v = cm.Data["v"]
	} else if !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	rp.mu.Lock()
	rp.reconciles = append(rp.reconciles, reconciled{seq: ctx.Value(seqKey{}).(int64), name: req.Name, v: v})
	hold := rp.hold
	if hold != nil {
		rp.holding++
	}
	rp.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
		}
	}
	return reconcile.Result{}, nil
}

// holdReconciles makes the inner reconciler block until release.
func (rp *elasticReplica) holdReconciles() {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	rp.hold, rp.holding = make(chan struct{}), 0
}

// release lets held reconciles return.
func (rp *elasticReplica) release() {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.hold != nil {
		close(rp.hold)
		rp.hold = nil
	}
}

func (rp *elasticReplica) isHolding() bool {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return rp.hold != nil && rp.holding > 0
}

// reconciledWith says whether the inner reconciler saw name with v.
func (rp *elasticReplica) reconciledWith(name, v string) bool {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	for _, r := range rp.reconciles {
		if r.name == name && r.v == v {
			return true
		}
	}
	return false
}

// stale returns the inner reconciles this replica ran on an object after
// its gate had closed for the object's bucket and had not opened again:
// work on an object another replica handles by then.
func (rp *elasticReplica) stale() []reconciled {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	var out []reconciled
	for _, r := range rp.reconciles {
		obj := rp.w.objs[r.name]
		closed := false
		for _, g := range rp.gates {
			if g.seq > r.seq {
				break
			}
			if in, _ := g.s.Contains(obj); in {
				closed = !g.opened
			}
		}
		if closed {
			out = append(out, r)
		}
	}
	return out
}

// poll waits until cond holds, failing the test at the deadline.
func (w *elasticWorld) poll(ctx context.Context, what string, cond func() bool) {
	w.t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			w.mu.Lock()
			for _, rp := range w.replicas {
				w.t.Logf("%s", rp.ring.Status())
			}
			w.mu.Unlock()
			w.t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-tick.C:
		}
	}
}

// formed says whether every replica handles what the ring plans for it,
// with all of them members, and every ConfigMap is handled by exactly one.
func (w *elasticWorld) formed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, rp := range w.replicas {
		if st := rp.ring.Status(); !st.Formed() || st.Members != len(w.replicas) || st.Handling == 0 {
			return false
		}
	}
	for _, obj := range w.objs {
		if len(w.ownersLocked(obj)) != 1 {
			return false
		}
	}
	return true
}

func (w *elasticWorld) ownersLocked(obj *corev1.ConfigMap) []*elasticReplica {
	var out []*elasticReplica
	for _, rp := range w.replicas {
		if rp.ring.Handles(obj) {
			out = append(out, rp)
		}
	}
	return out
}

// owner returns the one replica handling obj.
func (w *elasticWorld) owner(obj *corev1.ConfigMap) *elasticReplica {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ownersLocked(obj)[0]
}

// setV updates every ConfigMap's "v".
func (w *elasticWorld) setV(ctx context.Context, v string) {
	w.t.Helper()
	for name := range w.objs {
		cm, err := w.cs.CoreV1().ConfigMaps("team").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			w.t.Fatal(err)
		}
		cm.Data["v"] = v
		if _, err := w.cs.CoreV1().ConfigMaps("team").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			w.t.Fatal(err)
		}
	}
}

// reconciledOnceBy says whether every ConfigMap was reconciled with v by
// its owner now, failing the test if some other replica did too.
func (w *elasticWorld) reconciledOnceBy(v string) bool {
	for name, obj := range w.objs {
		owner := w.owner(obj)
		if !owner.reconciledWith(name, v) {
			return false
		}
		w.mu.Lock()
		for _, rp := range w.replicas {
			if rp != owner && rp.reconciledWith(name, v) {
				w.t.Errorf("%s (v=%s) reconciled by %s, but %s handles it", name, v, rp.id, owner.id)
			}
		}
		w.mu.Unlock()
	}
	return true
}

// scaleOut is the scenario of TestElasticScaleOut*: two replicas form a
// ring, then, with their reconcilers held and every ConfigMap's change
// queued, a third joins. It returns the stale reconciles of the first two.
func scaleOut(t *testing.T, wrap bool) []reconciled {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	w := newElasticWorld(t, 60)
	a, b := w.join("a", wrap), w.join("b", wrap)
	w.poll(ctx, "two replicas to form the ring", w.formed)

	// Once formed, each change is reconciled by exactly one replica.
	w.setV(ctx, "2")
	w.poll(ctx, "every ConfigMap reconciled with v=2 by its owner", func() bool { return w.reconciledOnceBy("2") })

	// The old owners' workers are busy and every change is queued when
	// the third joins; each old owner's first release lets them go.
	a.holdReconciles()
	b.holdReconciles()
	w.setV(ctx, "3")
	w.poll(ctx, "both replicas to be held in a reconcile", func() bool { return a.isHolding() && b.isHolding() })
	c := w.join("c", wrap)
	w.poll(ctx, "three replicas to form the ring", w.formed)
	a.release()
	b.release()
	w.poll(ctx, "every ConfigMap reconciled with v=3 by its owner", func() bool {
		for name, obj := range w.objs {
			if !w.owner(obj).reconciledWith(name, "3") {
				return false
			}
		}
		return true
	})
	mine := 0
	for _, obj := range w.objs {
		if c.ring.Handles(obj) {
			mine++
		}
	}
	if mine == 0 {
		t.Fatal("the third replica handles no ConfigMap")
	}
	t.Logf("after scale-out: c handles %d of %d ConfigMaps", mine, len(w.objs))
	return append(a.stale(), b.stale()...)
}

// With Elastic's Reconciler, no replica reconciles a ConfigMap after it
// released its bucket, though the old owners had the change of every
// ConfigMap queued when the third replica joined; the third reconciles
// the ConfigMaps it took over.
func TestElasticScaleOut(t *testing.T) {
	if stale := scaleOut(t, true); len(stale) > 0 {
		t.Fatalf("%d reconciles after a release, e.g. %+v", len(stale), stale[0])
	}
}

// Without it, the same scale-out has the old owners reconcile, from
// their queues, ConfigMaps the third replica handles by then: what the
// wrapper prevents.
func TestElasticScaleOutWithoutTheWrapper(t *testing.T) {
	stale := scaleOut(t, false)
	if len(stale) == 0 {
		t.Fatal("no stale reconcile without the wrapper: the scale-out test would not catch a wrapper that drops nothing")
	}
	t.Logf("%d stale reconciles without the wrapper, e.g. %s (v=%s)", len(stale), stale[0].name, stale[0].v)
}

// stamped numbers each request as it is dequeued, before the wrapper's
// check, so a reconcile that passed the check is numbered before any
// gate change that came after the check.
type stamped struct {
	w     *elasticWorld
	inner reconcile.Reconciler
}

type seqKey struct{}

func (s stamped) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return s.inner.Reconcile(context.WithValue(ctx, seqKey{}, s.w.seq.Add(1)), req)
}
