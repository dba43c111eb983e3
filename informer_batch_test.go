package cache

import (
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"

	"github.com/kreflector/cache/internal/podgen"
)

// batchLists returns a list of n ConfigMaps at RV 10 and a relist at RV
// 20 in which every third has changed, the last is gone and one is new.
func batchLists(n int) []listReply {
	var first, second []*corev1.ConfigMap
	for i := range n {
		first = append(first, cm(fmt.Sprintf("cm-%04d", i), "5"))
		if i == n-1 {
			continue
		}
		rv := "5"
		if i%3 == 0 {
			rv = "15"
		}
		second = append(second, cm(fmt.Sprintf("cm-%04d", i), rv))
	}
	second = append(second, cm("new", "16"))
	return []listReply{{list: cmList("10", "", first...)}, {list: cmList("20", "", second...)}}
}

// The initial list and a relist reach a stuck handler's backlog as one
// entry each, not one notification per object; what it says is pending
// still counts every notification, and once the handler goes on it gets
// what a handler that kept up got, in the same order.
func TestReplaceQueuesOneEntryPerListener(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 300
		lw := &scriptLW{noWL: true, lists: batchLists(n)}
		inf := NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, Indexers{})
		log := &handlerLog{}
		if _, err := inf.AddEventHandler(log.handler("fast")); err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		stuck := log.handler("stuck").(ResourceEventHandlerDetailedFuncs)
		add := stuck.AddFunc
		stuck.AddFunc = func(obj any, initial bool) { <-release; add(obj, initial) }
		reg, _ := inf.AddEventHandler(stuck)
		stop := runInformer(t, inf)
		defer stop()
		synctest.Wait()
		l := reg.(*listener)
		if queued, pending := backlogLen(l), l.pending(); queued != 1 || pending != n-1 {
			t.Fatalf("after the initial list of %d: %d entries queued (want 1), %d pending (want %d)", n, queued, pending, n-1)
		}
		d := &informerDriver{t: t, lw: lw}
		d.send(errEvent(expiredStatus()))
		// Queued: the initial list's rest, one tombstone, the relist's batch
		// (n-1 objects listed again and one new).
		if queued, pending := backlogLen(l), l.pending(); queued != 3 || pending != n-1+1+n {
			t.Fatalf("after the relist: %d entries queued (want 3), %d pending (want %d)", queued, pending, 2*n)
		}
		close(release)
		synctest.Wait()
		if got, want := fmt.Sprint(log.calls["stuck"]), fmt.Sprint(log.calls["fast"]); got != want || len(log.calls["fast"]) != 2*n+1 {
			t.Fatalf("the stuck handler, once released, got %d calls unlike the other's %d", len(log.calls["stuck"]), len(log.calls["fast"]))
		}
		if !reg.HasSynced() || l.pending() != 0 {
			t.Fatalf("after the backlog drained: synced %v, pending %d", reg.HasSynced(), l.pending())
		}
	})
}

// backlogLen is how many entries l's backlog holds.
func backlogLen(l *listener) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.backlog) - l.head
}

// A compact informer's handlers share each object of a relist, an
// object the relist found unchanged is one object as old and new, and
// a handler removed half-way through the relist's batch gives back what
// the handoffs held for it.
func TestCompactBatchSharesAndGivesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 60
		lw := &scriptLW{noWL: true, lists: batchLists(n)}
		inf := NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, Indexers{})
		if err := inf.(ReflectorConfigurable).SetReflectorOptions(ReflectorOptions{Compact: &CompactOptions{}}); err != nil {
			t.Fatal(err)
		}
		seen := &sameObjects{calls: map[int][][2]any{}}
		for i := range 2 {
			if _, err := inf.AddEventHandler(seen.handler(i)); err != nil {
				t.Fatal(err)
			}
		}
		var mu sync.Mutex
		stuckAt := make(chan struct{})
		leaving := 0
		reg, _ := inf.AddEventHandler(ResourceEventHandlerFuncs{UpdateFunc: func(_, _ any) {
			mu.Lock()
			defer mu.Unlock()
			if leaving++; leaving == n/2 {
				<-stuckAt
			}
		}})
		stop := runInformer(t, inf)
		defer stop()
		synctest.Wait()
		(&informerDriver{t: t, lw: lw}).send(errEvent(expiredStatus()))
		if err := inf.RemoveEventHandler(reg); err != nil {
			t.Fatal(err)
		}
		close(stuckAt)
		synctest.Wait()
		budget := inf.GetIndexer().(*guardedIndexer).compact.cache.handoffs
		if used := budget.used.Load(); used != 0 {
			t.Fatalf("every handler done or gone: handoffs still hold %d bytes", used)
		}
		seen.mu.Lock()
		defer seen.mu.Unlock()
		calls := seen.calls[0]
		if len(calls) != 2*n+1 || len(seen.calls[1]) != len(calls) {
			t.Fatalf("handlers got %d and %d calls, want %d", len(calls), len(seen.calls[1]), 2*n+1)
		}
		for j, c := range calls {
			if c != seen.calls[1][j] {
				t.Fatalf("call %d: the handlers were given different objects", j)
			}
		}
		unchanged := 0
		for _, c := range calls[n+1:] {
			old, ok := c[0].(*corev1.ConfigMap)
			if ok && old.ResourceVersion == "5" && c[1].(*corev1.ConfigMap).ResourceVersion == "5" {
				if c[0] != c[1] {
					t.Fatalf("%s, unchanged: the relist gave two objects as old and new", old.Name)
				}
				unchanged++
			}
		}
		if unchanged == 0 {
			t.Fatal("no unchanged object in the relist: the test tests nothing")
		}
	})
}

// replaceBatch's slots: a listener leaving after reaching an object still
// counts as having reached it, one leaving before gives its share up, and
// the slot is forgotten once every listener still there has reached it;
// the warmer finds nothing to make for a forgotten slot.
func TestReplaceBatchSlots(t *testing.T) {
	s := newCompactStore(MetaNamespaceKeyFunc, nil, CompactOptions{})
	var recs []any
	for i := range 3 {
		r, err := s.pack(podgen.Pod(i, 1))
		if err != nil {
			t.Fatal(err)
		}
		s.cache.drop(r)
		recs = append(recs, r)
	}
	olds := []any{nil, recs[1], recs[2]}
	kinds := []batchKind{batchAdd, batchSame, batchSame}
	b := newReplaceBatch(recs, olds, false, func(i int) batchKind { return kinds[i] })
	b.listeners(3, 2)
	// A (syncing) reaches objects 0 and 1, then leaves.
	for i := range 2 {
		if _, ok := b.item(i, true); !ok {
			t.Fatalf("object %d: a syncing listener is not told", i)
		}
	}
	b.leave(2, true)
	// C (not syncing) is told of the add only.
	if _, ok := b.item(1, false); ok {
		t.Fatal("an unchanged object is told to a listener whose resync was not due")
	}
	b.item(0, false)
	if b.slots[0] == spentSlot {
		t.Fatal("object 0 forgotten while listener B has still to reach it")
	}
	// B (syncing) reaches object 0: every listener still there has.
	b.item(0, true)
	if b.slots[0] != spentSlot {
		t.Fatal("object 0 kept after every listener reached it")
	}
	if hs := b.ahead(0); hs[0] != nil || hs[1] != nil {
		t.Fatal("the warmer was given handoffs of an object every listener reached")
	}
	n, _ := b.item(1, true)
	if n.old != n.obj {
		t.Fatal("an unchanged record is handed off as two objects")
	}
	if b.slots[1] != spentSlot {
		t.Fatal("object 1 kept after B, its last listener, reached it")
	}
	hs := b.ahead(2)
	if hs[0] == nil || hs[1] != nil || hs[0].pending != 2 {
		t.Fatalf("the warmer's handoffs of object 2: %+v, want one, taken twice by B", hs)
	}
	b.leave(2, true)
	if b.slots[2] != spentSlot || hs[0].pending != 0 {
		t.Fatalf("B left before object 2: slot %v, %d takes still pending", b.slots[2] == spentSlot, hs[0].pending)
	}
}

// A handler removed while it pauses after a panic gives up the
// notification it had taken and not delivered: the handoffs' budget
// comes back whole.
func TestRemovedWhilePausingGivesBackItsHandoff(t *testing.T) {
	withoutReallyCrash(t)
	synctest.Test(t, func(t *testing.T) {
		lw := &scriptLW{noWL: true, lists: batchLists(10)}
		inf := NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, Indexers{})
		if err := inf.(ReflectorConfigurable).SetReflectorOptions(ReflectorOptions{Compact: &CompactOptions{}}); err != nil {
			t.Fatal(err)
		}
		if _, err := inf.AddEventHandler(ResourceEventHandlerFuncs{}); err != nil {
			t.Fatal(err)
		}
		reg, _ := inf.AddEventHandler(ResourceEventHandlerFuncs{AddFunc: func(any) { panic("handler bug") }})
		stop := runInformer(t, inf)
		defer stop()
		synctest.Wait() // the first add panicked; the second waits out the pause
		budget := inf.GetIndexer().(*guardedIndexer).compact.cache.handoffs
		if budget.used.Load() == 0 {
			t.Fatal("nothing held for the pausing handler: the test tests nothing")
		}
		if err := inf.RemoveEventHandler(reg); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if used := budget.used.Load(); used != 0 {
			t.Fatalf("the handler removed while pausing left %d bytes of handoffs held", used)
		}
	})
}
