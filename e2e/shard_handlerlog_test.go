//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
)

// handlerLog is an informer's event handler that records what it was told:
// which objects (by UID) it heard of, and, per key, the newest
// resourceVersion it was given and whether its last call was a delete.
type handlerLog struct {
	n notifier

	mu    sync.Mutex
	calls uint64
	uids  map[types.UID]struct{}
	// newest is the highest resourceVersion of any call per key; present
	// the keys whose last call was not a delete, with that call's RV;
	// deletedAt the call number of each key's last delete.
	newest    map[string]uint64
	present   map[string]uint64
	deletedAt map[string]uint64
}

func newHandlerLog() *handlerLog {
	return &handlerLog{uids: map[types.UID]struct{}{}, newest: map[string]uint64{}, present: map[string]uint64{}, deletedAt: map[string]uint64{}}
}

// handler returns the callbacks to register.
func (h *handlerLog) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { h.record(obj, false) },
		UpdateFunc: func(_, obj interface{}) { h.record(obj, false) },
		DeleteFunc: func(obj interface{}) {
			if t, ok := obj.(clientgocache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			h.record(obj, true)
		},
	}
}

func (h *handlerLog) record(obj interface{}, deleted bool) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	key := m.GetNamespace() + "/" + m.GetName()
	rv, _ := strconv.ParseUint(m.GetResourceVersion(), 10, 64)
	h.mu.Lock()
	h.calls++
	h.uids[m.GetUID()] = struct{}{}
	h.newest[key] = max(h.newest[key], rv)
	if deleted {
		delete(h.present, key)
		h.deletedAt[key] = h.calls
	} else {
		h.present[key] = rv
	}
	h.mu.Unlock()
	h.n.notify()
}

// callMark is the number of calls so far.
func (h *handlerLog) callMark() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls
}

// caughtUp waits until the handler has been told of every item of l: at
// its listed resourceVersion or a newer one, or deleted by a call after
// call number since (taken before l completed).
func (h *handlerLog) caughtUp(ctx context.Context, l completedList, since uint64) error {
	var behind string
	err := h.n.waitUntil(ctx, func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, it := range l.items {
			if h.newest[it.key] < it.rv && h.deletedAt[it.key] <= since {
				behind = fmt.Sprintf("%s at rv %d (newest told: %d)", it.key, it.rv, h.newest[it.key])
				return false
			}
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("handler behind its LIST of %d items, first %s: %w", len(l.items), behind, err)
	}
	return nil
}

// waitFor blocks until the handler has been told of key at resourceVersion
// rv or newer, or ctx ends.
func (h *handlerLog) waitFor(ctx context.Context, key string, rv uint64) error {
	err := h.n.waitUntil(ctx, func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.newest[key] >= rv
	})
	if err != nil {
		return fmt.Errorf("handler not told of %s at rv %d: %w", key, rv, err)
	}
	return nil
}

// snapshot returns the UIDs heard of and the keys present with their RVs.
func (h *handlerLog) snapshot() (map[types.UID]struct{}, map[string]uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	uids := make(map[types.UID]struct{}, len(h.uids))
	for u := range h.uids {
		uids[u] = struct{}{}
	}
	present := make(map[string]uint64, len(h.present))
	for k, v := range h.present {
		present[k] = v
	}
	return uids, present
}
