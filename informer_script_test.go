package cache

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	clientgocache "k8s.io/client-go/tools/cache"
)

// handlerLog records, per handler name, every call the handler gets.
type handlerLog struct {
	mu    sync.Mutex
	calls map[string][]string
}

func (h *handlerLog) record(name, call string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.calls == nil {
		h.calls = map[string][]string{}
	}
	h.calls[name] = append(h.calls[name], call)
}

func (h *handlerLog) handler(name string) ResourceEventHandler {
	return ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj interface{}, initial bool) {
			h.record(name, fmt.Sprintf("ADD %s initial=%v", describe(obj), initial))
		},
		UpdateFunc: func(old, obj interface{}) { h.record(name, "UPDATE "+describe(old)+" -> "+describe(obj)) },
		DeleteFunc: func(obj interface{}) { h.record(name, "DELETE "+describe(obj)) },
	}
}

// canonical returns name's calls with each run of calls whose relative
// order client-go leaves to map iteration (resync updates, the initial
// ADDs of a late handler, the tombstones of a relist) sorted.
func (h *handlerLog) canonical(name string) []string {
	h.mu.Lock()
	calls := slices.Clone(h.calls[name])
	h.mu.Unlock()
	for i := 0; i < len(calls); {
		j := i + 1
		for j < len(calls) && unordered(calls[i]) != "" && unordered(calls[j]) == unordered(calls[i]) {
			j++
		}
		sort.Strings(calls[i:j])
		i = j
	}
	return calls
}

func unordered(call string) string {
	switch {
	case strings.HasPrefix(call, "DELETE tombstone"):
		return "tombstones"
	case strings.HasPrefix(call, "ADD ") && strings.HasSuffix(call, "initial=true"):
		return "initial"
	case strings.HasPrefix(call, "UPDATE "):
		old, obj, _ := strings.Cut(strings.TrimPrefix(call, "UPDATE "), " -> ")
		if old == obj {
			return "resync"
		}
	}
	return ""
}

// describe renders an object a handler got: name@rv, "+T" if transformed.
func describe(obj interface{}) string {
	switch o := obj.(type) {
	case clientgocache.DeletedFinalStateUnknown:
		return "tombstone(" + o.Key + ", " + describe(o.Obj) + ")"
	case *corev1.ConfigMap:
		s := o.Name + "@" + o.ResourceVersion
		if o.Labels["transformed"] == "yes" {
			s += "+T"
		}
		return s
	case nil:
		return "<nil>"
	}
	return fmt.Sprintf("%T", obj)
}

// markTransformed is a TransformFunc that labels (a copy of) ConfigMaps.
func markTransformed(obj interface{}) (interface{}, error) {
	c, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return obj, nil
	}
	c = c.DeepCopy()
	c.Labels = map[string]string{"transformed": "yes"}
	return c, nil
}

// informerDriver runs one informer inside a synctest bubble and lets a
// scenario feed its watch, wait, and add or remove handlers.
type informerDriver struct {
	t    *testing.T
	lw   *scriptLW
	inf  SharedIndexInformer
	log  *handlerLog
	regs map[string]ResourceEventHandlerRegistration
}

// settle lets fake time pass (past any backoff) and waits until every
// goroutine of the bubble is idle.
func (d *informerDriver) settle() {
	time.Sleep(3 * time.Second)
	synctest.Wait()
}

// send feeds events to the current watch and settles.
func (d *informerDriver) send(events ...watch.Event) {
	w := d.lw.current(d.t)
	for _, e := range events {
		w.Action(e.Type, e.Object)
	}
	d.settle()
}

// add registers a handler (resync nil: the informer's default period).
func (d *informerDriver) add(name string, resync *time.Duration) {
	reg, err := d.inf.AddEventHandlerWithOptions(d.log.handler(name), HandlerOptions{ResyncPeriod: resync})
	if err != nil {
		d.t.Fatalf("adding %s: %v", name, err)
	}
	d.regs[name] = reg
}

func (d *informerDriver) remove(name string) {
	if err := d.inf.RemoveEventHandler(d.regs[name]); err != nil {
		d.t.Fatalf("removing %s: %v", name, err)
	}
	d.settle()
}

func (d *informerDriver) sleep(dur time.Duration) {
	time.Sleep(dur)
	synctest.Wait()
}

func period(d time.Duration) *time.Duration { return &d }
