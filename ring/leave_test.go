package ring

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	clientgocache "k8s.io/client-go/tools/cache"
)

// listHold passes a ListerWatcher's calls through, except that while it
// is held every list (a LIST, or a watch asking for initial events)
// waits until it is let go: a cache that cannot fill.
type listHold struct {
	lw   clientgocache.ListerWatcher
	mu   sync.Mutex
	gate chan struct{} // nil: not held
}

func (h *listHold) hold() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gate = make(chan struct{})
}

func (h *listHold) letGo() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gate != nil {
		close(h.gate)
		h.gate = nil
	}
}

func (h *listHold) wait() {
	h.mu.Lock()
	g := h.gate
	h.mu.Unlock()
	if g != nil {
		<-g
	}
}

func (h *listHold) List(o metav1.ListOptions) (runtime.Object, error) {
	h.wait()
	return h.lw.List(o)
}

func (h *listHold) Watch(o metav1.ListOptions) (watch.Interface, error) {
	if o.SendInitialEvents != nil && *o.SendInitialEvents {
		h.wait()
	}
	return h.lw.Watch(o)
}

// undeletable refuses to delete Leases, as a server that cannot be
// reached at that moment does.
type undeletable struct {
	coordinationv1client.LeaseInterface
}

func (undeletable) Delete(context.Context, string, metav1.DeleteOptions) error {
	return errors.New("connection refused")
}

// startSplit runs replica name with its informer (handler h besides the
// adds) on a context of its own, which outlives the ring's: cancelling
// the returned context makes the ring leave while the informer goes on.
// stopInformer ends the informer and waits for both.
func (g *rig) startSplit(name string, cfg Config, lw clientgocache.ListerWatcher, h clientgocache.ResourceEventHandler) (rp *replica, stopInformer func()) {
	g.t.Helper()
	r, err := New(cfg)
	if err != nil {
		g.t.Fatal(err)
	}
	rp = &replica{name: name, ring: r, done: make(chan struct{}), holes: &blackHole{}, adds: map[string]int{}}
	rp.inf = r.NewInformer(lw, &corev1.ConfigMap{}, 0, clientgocache.Indexers{}).(*Informer)
	for _, handler := range []clientgocache.ResourceEventHandler{clientgocache.ResourceEventHandlerFuncs{AddFunc: rp.added}, h} {
		if _, err := rp.inf.AddEventHandler(handler); err != nil {
			g.t.Fatal(err)
		}
	}
	ringCtx, cancelRing := context.WithCancel(g.ctx)
	infCtx, cancelInf := context.WithCancel(g.ctx)
	rp.cancel = cancelRing
	var wg sync.WaitGroup
	wg.Go(func() { rp.inf.RunWithContext(infCtx) })
	go func() {
		defer close(rp.done)
		_ = r.Run(ringCtx)
	}()
	g.mu.Lock()
	g.replicas[name] = rp
	g.mu.Unlock()
	return rp, func() {
		cancelRing()
		cancelInf()
		wg.Wait()
		<-rp.done
	}
}

// A replica that leaves while its informers go on, and runs out of time
// waiting for its successor's cache, releases what is left all the same:
// it publishes that it stopped handling it, with the positions its
// handlers had reached, so that the successor replays the deletes made
// before its cache could hold them. Its Lease is not deleted here (the
// server refuses), so the successor reads the release itself.
func TestAForcedLeaveIsReplayedToTheSuccessor(t *testing.T) {
	inBubble(t, func(t *testing.T, ctx context.Context) {
		g := newRig(t, ctx, 200)
		log := newCallLog()
		hold := &listHold{lw: g.cms.Namespace("")}
		cfgOf := func(name string, c coordinationv1client.LeasesGetter) Config {
			return Config{Client: c, Namespace: "ring", Name: "test", Identity: name, Buckets: rigBuckets}
		}
		_, stopA := g.startSplit("a", cfgOf("a", g.leases.CoordinationV1()), hold, log.handler("a"))
		defer stopA()
		noDelete := wrapLeases(g.leases.CoordinationV1(), func(l coordinationv1client.LeaseInterface) coordinationv1client.LeaseInterface {
			return undeletable{l}
		})
		b, stopB := g.startSplit("b", cfgOf("b", noDelete), g.cms.Namespace(""), log.handler("b"))
		defer stopB()
		g.waitFormed(30 * time.Second)
		g.sampleFor(time.Second)
		var victims []*corev1.ConfigMap
		for _, o := range g.objects {
			if b.ring.Handles(o) && len(victims) < 5 {
				victims = append(victims, o.(*corev1.ConfigMap))
			}
		}
		if len(victims) == 0 {
			t.Fatal("b handles no object")
		}
		hold.hold()
		defer hold.letGo()
		g.leave("b") // its informer goes on; a cannot cache b's buckets
		if s := b.ring.Status(); !s.Left || s.Handling != 0 {
			t.Fatalf("b has not left, or handles %d buckets: %s", s.Handling, s)
		}
		for _, v := range victims {
			if _, err := g.cms.Delete(g.ctx, v.Namespace, v.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			g.objects = slicesDelete(g.objects, runtime.Object(v))
		}
		g.sampleFor(time.Second)
		hold.letGo()
		g.waitFormed(time.Minute)
		g.sampleFor(5 * time.Second) // the opening waits for its replay
		log.check(t, g)
		log.mu.Lock()
		for _, v := range victims {
			if log.last["b"][string(v.UID)].deleted {
				t.Errorf("b, which had let %s go, was told of its delete", v.Name)
			}
			if !log.last["a"][string(v.UID)].deleted {
				t.Errorf("a was not told of the delete of %s, made after b let it go and before a's cache held it: %v", v.Name, log.hist[v.Name])
			}
		}
		log.mu.Unlock()
		if s := g.replicas["a"].ring.Status(); s.Replayed < len(victims) {
			t.Errorf("a replayed %d deletes, want ≥ %d: %s", s.Replayed, len(victims), s)
		}
	})
}
