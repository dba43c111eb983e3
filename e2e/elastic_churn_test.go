//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	clientgocache "k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// Kinds of write in the churn's log.
const (
	opCreate = "create"
	opPatch  = "patch"
	opDelete = "delete"
)

// churnWrite is one write the churn made and the server acknowledged.
type churnWrite struct {
	// at is when the answer arrived, on the machine's wall clock.
	at        time.Time
	op        string
	name, uid string
	// rv is the resourceVersion the server answered with. kube-apiserver
	// answers a ConfigMap's DELETE with a Status (uid, no resourceVersion:
	// the ConfigMap registry does not return the deleted object), so for
	// a delete it is 0 here, and the deletion's resourceVersion comes from
	// the test's own watch (refWatch).
	rv int64
}

// cmChurn writes ConfigMaps of a namespace at a steady rate until
// stopped: merge-patches of the base objects cm-0 … cm-(base-1) (80%),
// creates of new churn-N objects (10%) and deletes of live churn-N objects
// (10%). Each write is issued on a tick, by one of a few workers, so a
// slow call does not slow the pace. While paused it writes nothing. Every
// acknowledged write is logged (log).
type cmChurn struct {
	cs     kubernetes.Interface
	ns     string
	base   int
	paused atomic.Bool
	stop   chan struct{}
	done   chan struct{}

	writes, failed atomic.Uint64
	started        time.Time
	ended          time.Time    // set by finish
	pausedFor      atomic.Int64 // nanoseconds

	mu   sync.Mutex
	live []string
	next int
	err  error
	wlog []churnWrite
}

func startCMChurn(cs kubernetes.Interface, ns string, base int, rate float64) *cmChurn {
	c := &cmChurn{cs: cs, ns: ns, base: base, stop: make(chan struct{}), done: make(chan struct{}), started: time.Now()}
	jobs := make(chan int, 64)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for op := range jobs {
				c.write(rng, op)
			}
		})
	}
	go func() {
		defer close(c.done)
		defer wg.Wait()
		defer close(jobs)
		c.tick(jobs, time.Duration(float64(time.Second)/rate))
	}()
	return c
}

// tick hands out one write per period until stopped.
func (c *cmChurn) tick(jobs chan<- int, period time.Duration) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for op := 0; ; op++ {
		select {
		case <-c.stop:
			return
		case <-tick.C:
		}
		if c.paused.Load() {
			c.pausedFor.Add(int64(period))
			continue
		}
		select {
		case jobs <- op:
		default: // every worker busy: the tick is lost, the rate shows it
		}
	}
}

func (c *cmChurn) write(rng *rand.Rand, op int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	api := c.cs.CoreV1().ConfigMaps(c.ns)
	var err error
	var got *corev1.ConfigMap
	w := churnWrite{op: opPatch}
	switch k := rng.IntN(10); {
	case k == 0:
		w.op, w.name = opCreate, c.newName()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.name}, Data: map[string]string{"op": strconv.Itoa(op)}}
		if got, err = api.Create(ctx, cm, metav1.CreateOptions{}); err == nil {
			c.mu.Lock()
			c.live = append(c.live, w.name)
			c.mu.Unlock()
		}
	case k == 1 && c.takeLive(rng, &w.name):
		w.op = opDelete
		w.uid, err = c.del(ctx, w.name)
	default: // and a delete with no churn-N object live
		w.name = "cm-" + strconv.Itoa(rng.IntN(c.base))
		patch := fmt.Sprintf(`{"data":{"op":"%d"}}`, op)
		got, err = api.Patch(ctx, w.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	}
	c.logWrite(w, got, err)
}

// del deletes the ConfigMap name and returns its uid, from the Status the
// server answers with.
func (c *cmChurn) del(ctx context.Context, name string) (string, error) {
	obj, err := c.cs.CoreV1().RESTClient().Delete().Namespace(c.ns).Resource("configmaps").Name(name).
		Body(&metav1.DeleteOptions{}).Do(ctx).Get()
	if err != nil {
		return "", err
	}
	switch o := obj.(type) {
	case *metav1.Status:
		if o.Details != nil && o.Details.UID != "" {
			return string(o.Details.UID), nil
		}
	case *corev1.ConfigMap:
		return string(o.UID), nil
	}
	return "", fmt.Errorf("deleting %s: the answer %T names no uid", name, obj)
}

// logWrite counts a write and logs it if it succeeded; got is the object
// answered (nil for a delete).
func (c *cmChurn) logWrite(w churnWrite, got *corev1.ConfigMap, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.failed.Add(1)
		c.err = err
		return
	}
	w.at = time.Now()
	if got != nil {
		w.uid = string(got.UID)
		w.rv, _ = strconv.ParseInt(got.ResourceVersion, 10, 64)
	}
	c.wlog = append(c.wlog, w)
	c.writes.Add(1)
}

func (c *cmChurn) newName() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	return "churn-" + strconv.Itoa(c.next-1)
}

// takeLive takes a random live churn-N object off the list into name,
// or says there is none.
func (c *cmChurn) takeLive(rng *rand.Rand, name *string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.live) == 0 {
		return false
	}
	i := rng.IntN(len(c.live))
	*name = c.live[i]
	c.live[i] = c.live[len(c.live)-1]
	c.live = c.live[:len(c.live)-1]
	return true
}

// log returns a copy of the write log so far, in the order the answers
// arrived.
func (c *cmChurn) log() []churnWrite {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.wlog)
}

// rate is the writes a second until now or finish, not counting paused
// time.
func (c *cmChurn) rate() float64 {
	end := time.Now()
	if !c.ended.IsZero() {
		end = c.ended
	}
	d := end.Sub(c.started) - time.Duration(c.pausedFor.Load())
	return float64(c.writes.Load()) / d.Seconds()
}

// quiet pauses the churn and waits for the writes in flight.
func (c *cmChurn) quiet() {
	c.paused.Store(true)
	time.Sleep(time.Second) // longer than a write takes here
}

func (c *cmChurn) resume() { c.paused.Store(false) }

func (c *cmChurn) finish(t *testing.T) {
	close(c.stop)
	<-c.done
	c.ended = time.Now()
	if n := c.failed.Load(); n > 0 {
		c.mu.Lock()
		defer c.mu.Unlock()
		t.Errorf("the churn had %d failed writes, the last: %v", n, c.err)
	}
}

// refEvent is one event of the test's own watch.
type refEvent struct {
	typ       watch.EventType
	uid, name string
	rv        int64
}

// refWatch is the test's own watch of the namespace's ConfigMaps, from
// before the churn to its end, resumed after a break from the last
// resourceVersion it saw (client-go's RetryWatcher): what the server says
// happened, to hold the write log to and to learn each deletion's
// resourceVersion (that of the DELETED event).
type refWatch struct {
	rw     *watchtools.RetryWatcher
	done   chan struct{}
	events []refEvent // written by the reading goroutine until done closes
	errs   int
}

func startRefWatch(t *testing.T, cs kubernetes.Interface, ns string) *refWatch {
	t.Helper()
	l, err := cs.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	lw := &clientgocache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return cs.CoreV1().ConfigMaps(ns).Watch(ctx, o)
	}}
	rw, err := watchtools.NewRetryWatcherWithContext(context.Background(), l.ResourceVersion, lw)
	if err != nil {
		t.Fatal(err)
	}
	w := &refWatch{rw: rw, done: make(chan struct{})}
	go w.read()
	t.Cleanup(func() { w.stop() })
	return w
}

func (w *refWatch) read() {
	defer close(w.done)
	for ev := range w.rw.ResultChan() {
		cm, ok := ev.Object.(*corev1.ConfigMap)
		switch {
		case ev.Type == watch.Error || !ok && ev.Type != watch.Bookmark:
			w.errs++
		case ok && ev.Type != watch.Bookmark:
			rv, _ := strconv.ParseInt(cm.ResourceVersion, 10, 64)
			w.events = append(w.events, refEvent{typ: ev.Type, uid: string(cm.UID), name: cm.Name, rv: rv})
		}
	}
}

// stop ends the watch and returns its events.
func (w *refWatch) stop() []refEvent {
	w.rw.Stop()
	<-w.done
	return w.events
}
