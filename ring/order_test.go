package ring

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgocache "k8s.io/client-go/tools/cache"
)

// callLog records every handler call of every replica in one global
// order and checks, as they come, that each replica's handler sees each
// object's versions in order and nothing after its delete.
type callLog struct {
	mu sync.Mutex
	// last is, per replica and object uid, the last version handed and
	// whether it was a delete.
	last map[string]map[string]seenState
	// final is, per object name, the last call over all replicas.
	final  map[string]seenState
	faults []string
	// hist is, per object name, every call, for the failure messages.
	hist map[string][]string
	// delay is how long each call takes: a slow handler's backlog grows,
	// so its stream lags behind the store.
	delay time.Duration
}

type seenState struct {
	rv      int
	deleted bool
	uid     string
}

func newCallLog() *callLog {
	return &callLog{last: map[string]map[string]seenState{}, final: map[string]seenState{}, hist: map[string][]string{}}
}

// handler returns replica name's recording handler.
func (c *callLog) handler(name string) clientgocache.ResourceEventHandler {
	return clientgocache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { c.record(name, "add", obj) },
		UpdateFunc: func(_, obj interface{}) { c.record(name, "update", obj) },
		DeleteFunc: func(obj interface{}) { c.record(name, "delete", obj) },
	}
}

func (c *callLog) record(replica, event string, obj interface{}) {
	time.Sleep(c.delay) // a handler that takes time lets its backlog grow
	tomb := false
	if t, ok := obj.(clientgocache.DeletedFinalStateUnknown); ok {
		obj, tomb = t.Obj, true
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	rv, _ := strconv.Atoi(m.GetResourceVersion())
	now := seenState{rv: rv, deleted: event == "delete", uid: string(m.GetUID())}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last[replica] == nil {
		c.last[replica] = map[string]seenState{}
	}
	was, ok := c.last[replica][now.uid]
	switch {
	case ok && was.deleted:
		c.faults = append(c.faults, fmt.Sprintf("%s: %s of %s at %d after its delete", replica, event, m.GetName(), rv))
	case ok && rv < was.rv && !tomb:
		c.faults = append(c.faults, fmt.Sprintf("%s: %s of %s at %d after version %d", replica, event, m.GetName(), rv, was.rv))
	}
	if tomb && ok {
		now.rv = was.rv
	}
	c.last[replica][now.uid] = now
	c.final[m.GetName()] = now
	c.hist[m.GetName()] = append(c.hist[m.GetName()], fmt.Sprintf("%s %s %d", replica, event, rv))
}

// churn writes to the rig's objects every period until stop is called:
// mostly updates, and now and then a delete and a create, keeping
// g.objects current.
func (g *rig) churn(ctx context.Context, period time.Duration, seed uint64) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	rng := rand.New(rand.NewPCG(seed, seed))
	go func() {
		defer close(done)
		for n := 0; ctx.Err() == nil; n++ {
			g.write(ctx, rng, n)
			select {
			case <-ctx.Done():
			case <-time.After(period):
			}
		}
	}()
	return func() { cancel(); <-done }
}

func (g *rig) write(ctx context.Context, rng *rand.Rand, n int) {
	g.mu.Lock()
	i := rng.IntN(len(g.objects))
	obj := g.objects[i]
	g.mu.Unlock()
	cm := obj.(*corev1.ConfigMap)
	if n%10 != 9 {
		if _, err := g.cms.Update(ctx, touchN(cm, n), metav1.UpdateOptions{}); err != nil && ctx.Err() == nil {
			g.t.Errorf("update: %v", err)
		}
		return
	}
	if _, err := g.cms.Delete(ctx, cm.Namespace, cm.Name, metav1.DeleteOptions{}); err != nil {
		return
	}
	made, err := g.cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cm.Namespace, Name: fmt.Sprintf("new-%05d", n)}}, metav1.CreateOptions{})
	if err != nil {
		return
	}
	g.mu.Lock()
	g.objects[i] = made
	g.mu.Unlock()
}

func touchN(cm *corev1.ConfigMap, n int) *corev1.ConfigMap {
	c := cm.DeepCopy()
	c.Data = map[string]string{"n": strconv.Itoa(n)}
	c.ResourceVersion = ""
	return c
}

// Buckets change hands under a steady stream of writes: every replica's
// handler sees each object's versions in order, nothing after its delete,
// and at the end the last call for every object, over all replicas, shows
// the server's state.
func TestHandoffEventsStayInOrder(t *testing.T) {
	inBubble(t, func(t *testing.T, ctx context.Context) {
		g := newRig(t, ctx, 300)
		log := newCallLog()
		log.delay = 2 * time.Millisecond
		join := func(name string) { g.joinWith(name, nil, log.handler(name)) }
		join("a")
		g.waitFormed(30 * time.Second)
		stop := g.churn(ctx, 3*time.Millisecond, 1)
		for _, step := range []func(){
			func() { join("b") }, func() { join("c") }, func() { g.leave("a") },
			func() { join("d") }, func() { g.leave("b") }, func() { join("e") },
		} {
			step()
			g.waitFormed(time.Minute)
			g.sampleFor(time.Second)
		}
		stop()
		g.sampleFor(5 * time.Second) // openings wait for their replays
		for _, rp := range g.replicas {
			if s := rp.ring.Status(); s.Unreplayed > 0 {
				t.Errorf("%s: %v", rp.name, s)
			}
		}
		log.check(t, g)
		g.leaveAll()
	})
}

// check reports the faults seen and compares the last call for every
// object with the server.
func (c *callLog) check(t *testing.T, g *rig) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.faults {
		t.Error(f)
	}
	objs, _ := g.cms.Objects()
	live := map[string]bool{}
	for _, o := range objs {
		m, _ := meta.Accessor(o)
		live[m.GetName()] = true
		rv, _ := strconv.Atoi(m.GetResourceVersion())
		if got := c.final[m.GetName()]; got.deleted || got.rv != rv {
			t.Errorf("%s: last handled %+v, the server has version %d; calls %v", m.GetName(), got, rv, c.hist[m.GetName()])
		}
	}
	for name, s := range c.final {
		if !live[name] && !s.deleted {
			t.Errorf("%s: deleted on the server, last handled as present (%+v) %v", name, s, c.hist[name])
		}
	}
	t.Logf("%d objects, %d handler faults", len(objs), len(c.faults))
}
