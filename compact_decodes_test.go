package cache

import (
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kreflector/cache/internal/podgen"
)

// sameObjects records, per handler, the objects each call was given.
type sameObjects struct {
	mu    sync.Mutex
	calls map[int][][2]any
}

func (s *sameObjects) handler(i int) ResourceEventHandlerFuncs {
	rec := func(old, obj any) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.calls[i] = append(s.calls[i], [2]any{old, obj})
	}
	return ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { rec(nil, obj) },
		UpdateFunc: rec,
		DeleteFunc: func(obj any) { rec(nil, obj) },
	}
}

// runCompactWithThree makes inf compact, gives it three handlers that
// record what they are given, and runs it (until the test ends) to its
// first sync.
func runCompactWithThree(t *testing.T, inf SharedIndexInformer) *sameObjects {
	t.Helper()
	if err := inf.(ReflectorConfigurable).SetReflectorOptions(ReflectorOptions{Compact: &CompactOptions{}}); err != nil {
		t.Fatal(err)
	}
	seen := &sameObjects{calls: map[int][][2]any{}}
	for i := range 3 {
		if _, err := inf.AddEventHandler(seen.handler(i)); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(runInformer(t, inf))
	synctest.Wait()
	return seen
}

// An informer's handlers are given the objects the watch decoded (carried
// through the queue to the read cache), and an update's old object from
// the read cache: with room for every object, nothing is decoded, and
// the handlers share each object.
func TestCompactHandlersShareTheDecodedObjects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw, inf := abcInformer()
		seen := runCompactWithThree(t, inf)
		d := &informerDriver{t: t, lw: lw}
		d.send(ev(watch.Modified, cm("a", "11")), ev(watch.Modified, cm("a", "12")), ev(watch.Deleted, cm("b", "13")), ev(watch.Added, cm("d", "14")))
		if st := inf.(InformerHealthReporter).Stats().Store; st.Decodes != 0 {
			t.Fatalf("handlers decoded %d objects, want none: %+v", st.Decodes, st)
		}
		seen.mu.Lock()
		defer seen.mu.Unlock()
		if len(seen.calls[0]) != 7 {
			t.Fatalf("handler 0 got %d calls, want 7", len(seen.calls[0]))
		}
		for i := 1; i < 3; i++ {
			for j, c := range seen.calls[i] {
				if c != seen.calls[0][j] {
					t.Fatalf("call %d: handler %d was given other objects than handler 0", j, i)
				}
			}
		}
		// The second update's old object is the first update's new one.
		if seen.calls[0][4][0] != seen.calls[0][3][1] {
			t.Fatal("an update's old object was decoded again, not the one handlers were given")
		}
	})
}

// A handler stuck behind the others keeps records in its backlog, not
// decoded objects: the read cache stays within its bound, and the handler
// decodes what it no longer has when it goes on.
func TestCompactSlowHandlerBacklogHoldsRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw, inf := abcInformer()
		limit := 2 * decodedSize(60)
		if err := inf.(ReflectorConfigurable).SetReflectorOptions(ReflectorOptions{Compact: &CompactOptions{ReadCacheBytes: limit}}); err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		var slowSaw []string
		slow, _ := inf.AddEventHandler(ResourceEventHandlerFuncs{UpdateFunc: func(_, obj any) {
			<-release
			slowSaw = append(slowSaw, obj.(*corev1.ConfigMap).ResourceVersion)
		}})
		stop := runInformer(t, inf)
		defer stop()
		synctest.Wait()
		d := &informerDriver{t: t, lw: lw}
		var events []watch.Event
		for i := range 20 {
			events = append(events, ev(watch.Modified, cm("a", strconv.Itoa(11+i))))
		}
		d.send(events...)
		l := slow.(*listener)
		l.mu.Lock()
		held := 0
		for _, n := range l.backlog[l.head:] {
			h, ok := n.obj.(*handoff)
			if !ok {
				t.Errorf("a stuck handler's backlog holds a %T", n.obj)
				continue
			}
			if h.obj != nil {
				held++
			}
		}
		l.mu.Unlock()
		st := inf.(InformerHealthReporter).Stats().Store
		if st.ReadCacheBytes > limit {
			t.Fatalf("read cache holds %d bytes, over its %d", st.ReadCacheBytes, limit)
		}
		budget := inf.GetIndexer().(*guardedIndexer).compact.cache.handoffs
		if used := budget.used.Load(); used > limit || held > 2 {
			t.Fatalf("the backlog holds %d decoded objects, %d bytes, over %d", held, used, limit)
		}
		close(release)
		synctest.Wait()
		if len(slowSaw) != 20 || slowSaw[19] != "30" {
			t.Fatalf("slow handler saw %v", slowSaw)
		}
		if after := inf.(InformerHealthReporter).Stats().Store; after.Decodes == st.Decodes {
			t.Fatal("the slow handler decoded nothing: its objects were kept for it")
		}
		if used := budget.used.Load(); used != 0 {
			t.Fatalf("every notification delivered, handoffs still hold %d bytes", used)
		}
	})
}

// A handler removed with a backlog gives back what its handoffs held.
func TestCompactRemovedHandlerGivesBackItsHandoffs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw, inf := abcInformer()
		if err := inf.(ReflectorConfigurable).SetReflectorOptions(ReflectorOptions{Compact: &CompactOptions{}}); err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		stuck, _ := inf.AddEventHandler(ResourceEventHandlerFuncs{UpdateFunc: func(_, _ any) { <-release }})
		if _, err := inf.AddEventHandler(ResourceEventHandlerFuncs{}); err != nil {
			t.Fatal(err)
		}
		stop := runInformer(t, inf)
		defer stop()
		synctest.Wait()
		d := &informerDriver{t: t, lw: lw}
		d.send(ev(watch.Modified, cm("a", "11")), ev(watch.Modified, cm("b", "12")), ev(watch.Modified, cm("c", "13")))
		budget := inf.GetIndexer().(*guardedIndexer).compact.cache.handoffs
		if budget.used.Load() == 0 {
			t.Fatal("nothing held for the stuck handler: the test tests nothing")
		}
		if err := inf.RemoveEventHandler(stuck); err != nil {
			t.Fatal(err)
		}
		close(release)
		synctest.Wait()
		if used := budget.used.Load(); used != 0 {
			t.Fatalf("after the stuck handler's removal, handoffs hold %d bytes", used)
		}
	})
}

// Readers missing the same record at once decode it once and share it.
func TestConcurrentMissesDecodeOnce(t *testing.T) {
	s := newCompactStore(MetaNamespaceKeyFunc, nil, CompactOptions{})
	r, err := s.pack(podgen.Pod(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	s.cache.drop(r)
	start := make(chan struct{})
	objs := make([]any, 8)
	var wg sync.WaitGroup
	for i := range objs {
		wg.Go(func() {
			<-start
			objs[i], _ = r.forHandlers()
		})
	}
	close(start)
	wg.Wait()
	if d := s.cache.decodes.Load(); d != 1 {
		t.Fatalf("%d decodes, want 1", d)
	}
	for _, o := range objs[1:] {
		if o != objs[0] {
			t.Fatal("readers got different objects")
		}
	}
}

// The read cache's hand reaches entries in the order they came: an entry
// no one read since it came is evicted before newer ones; one read is
// spared once; a retired one goes first, read or not.
func TestReadCacheClockOrder(t *testing.T) {
	c := newReadCache(4, 0)
	recs := make([]*compactRecord, 8)
	for i := range recs {
		recs[i] = &compactRecord{key: strconv.Itoa(i)}
	}
	for _, r := range recs[:4] {
		c.put(r, r.key, 1)
	}
	c.get(recs[1], true)   // read: spared once
	c.get(recs[2], true)   // read, but retired: not spared
	c.retire(recs[2])      //
	c.get(recs[3], false)  // a handler's read: not marked
	c.put(recs[4], "4", 1) // evicts 0
	c.put(recs[5], "5", 1) // spares 1, evicts 2
	c.put(recs[6], "6", 1) // evicts 3
	for i, want := range []bool{false, true, false, false, true, true, true} {
		if got := recs[i].hot.Load() != nil; got != want {
			t.Errorf("entry %d kept: %v, want %v", i, got, want)
		}
	}
	if c.bytes() != 4 || c.entries() != 4 {
		t.Fatalf("cache holds %d bytes in %d entries, want 4 in 4", c.bytes(), c.entries())
	}
}

// carries says whether r carries its just-packed object to the store.
func carries(r *compactRecord) bool { return r.fresh.Load() != nil }

// An informer's store carries just-packed objects to the store within the
// read cache's bound, counted from what was stored last; records that
// never reach the store hold nothing up.
func TestFreshObjectsStayWithinTheBound(t *testing.T) {
	s := newCompactStore(MetaNamespaceKeyFunc, nil, CompactOptions{})
	s.notifies = true
	first, err := s.pack(podgen.Pod(0, 1))
	if err != nil {
		t.Fatal(err)
	}
	size := first.fresh.Load().size
	s.opts.ReadCacheBytes = 3*size + size/2 // the Pods differ a little in size
	s.cache.limit.Store(s.opts.ReadCacheBytes)
	s.cache.handoffs.limit.Store(s.opts.ReadCacheBytes)
	var recs []*compactRecord
	for i := 1; i < 6; i++ {
		r, _ := s.pack(podgen.Pod(i, 1))
		recs = append(recs, r)
	}
	// Pods 0, 1, 2 fit; 3, 4, 5 (never stored) do not.
	for i, r := range recs {
		if has := carries(r); has != (i < 2) {
			t.Errorf("pod %d carries its object: %v", i+1, has)
		}
	}
	if err := s.Add(recs[1]); err != nil {
		t.Fatal(err)
	}
	if carries(recs[1]) || recs[1].hot.Load() == nil {
		t.Fatal("a stored record's object did not move to the read cache")
	}
	// Pods 3 and 4 are dropped (a LIST that failed); pod 5 is stored.
	if next, _ := s.pack(podgen.Pod(9, 1)); carries(next) {
		t.Fatal("a record carries its object beyond the bound")
	}
	if err := s.Add(recs[4]); err != nil {
		t.Fatal(err)
	}
	if next, _ := s.pack(podgen.Pod(9, 2)); !carries(next) {
		t.Fatal("records dropped before the store keep later ones from carrying their objects")
	}
}

// A LIST page is packed with the informer's transform and the key and
// index functions run in order on the caller's goroutine, one at a time,
// and the encoding spread over goroutines: every item ends a complete
// record that decodes to its object.
func TestCompactPagePacking(t *testing.T) {
	var inFlight, most atomic.Int32
	var order []string
	transform := func(obj any) (any, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		if n > most.Load() {
			most.Store(n)
		}
		p := obj.(*corev1.Pod)
		order = append(order, p.Name)
		return p, nil
	}
	g := &guardedIndexer{indexers: Indexers{NamespaceIndex: MetaNamespaceIndexFunc}}
	g.storeFor(&CompactOptions{})
	p := g.packer(transform)
	items := make([]any, 300)
	want := make([]*corev1.Pod, len(items))
	for i := range items {
		want[i] = podgen.Pod(i, 1)
		items[i] = want[i].DeepCopy()
	}
	if err := p.page(items); err != nil {
		t.Fatal(err)
	}
	if most.Load() != 1 {
		t.Fatalf("the transform ran %d at once", most.Load())
	}
	for i, it := range items {
		r, ok := it.(*compactRecord)
		if !ok || r.data == "" || order[i] != want[i].Name {
			t.Fatalf("item %d: %T, transformed as %s", i, it, order[i])
		}
		got, err := r.object()
		if err != nil || !reflect.DeepEqual(got, want[i]) {
			t.Fatalf("item %d does not decode to its object: %v", i, err)
		}
	}
}

// The warmer decodes handoffs ahead of the listeners within the budget,
// waits for room when it is spent, and returns when stopped, also while
// waiting; listeners then decode nothing of what it warmed.
func TestWarmerDecodesAheadWithinTheBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newCompactStore(MetaNamespaceKeyFunc, nil, CompactOptions{})
		var hs []*handoff
		for i := range 5 {
			r, err := s.pack(podgen.Pod(i, 1))
			if err != nil {
				t.Fatal(err)
			}
			s.cache.drop(r)
			hs = append(hs, handOff(r, 1).(*handoff))
		}
		size := hs[0].rec.decodedSize()
		budget := s.cache.handoffs
		budget.limit.Store(2 * (2*size + size/2)) // the warmer's half holds two of the Pods, which differ a little in size
		w := newWarmer(budget)
		var wg sync.WaitGroup
		wg.Go(w.run)
		for _, h := range hs {
			w.add(notification{kind: notifyAdd, obj: h})
		}
		synctest.Wait()
		if got := warmed(hs); got != 2 {
			t.Fatalf("%d handoffs warmed, want the 2 the warmer's half of the budget holds", got)
		}
		before := s.cache.decodes.Load()
		hs[0].take()
		synctest.Wait()
		if got := warmed(hs); got != 2 || s.cache.decodes.Load() != before+1 {
			t.Fatalf("after one was taken: %d warmed (want 2), %d decodes (want the warmer's one)", got, s.cache.decodes.Load()-before)
		}
		w.stop()
		wg.Wait()
		for _, h := range hs[1:] {
			h.take()
		}
		if used := budget.used.Load(); used != 0 {
			t.Fatalf("every handoff taken, the budget still has %d bytes out", used)
		}
	})
}

func warmed(hs []*handoff) int {
	n := 0
	for _, h := range hs {
		h.mu.Lock()
		if h.obj != nil {
			n++
		}
		h.mu.Unlock()
	}
	return n
}

// ReadCacheBytes zero sizes the read cache and the handoff budget to what
// the records hold, within their floors; a value given is kept.
func TestCompactBoundsFollowTheStore(t *testing.T) {
	s := newCompactStore(MetaNamespaceKeyFunc, nil, CompactOptions{})
	if got := s.cache.limit.Load(); got != readCacheFloor {
		t.Fatalf("empty store: read cache bound %d, want the floor %d", got, readCacheFloor)
	}
	if got := s.cache.handoffs.limit.Load(); got != handoffFloor {
		t.Fatalf("empty store: handoff budget %d, want its floor %d", got, handoffFloor)
	}
	s.mu.Lock()
	s.held = 64 * readCacheFloor // as if the records held 256 MiB
	s.resize()
	s.mu.Unlock()
	if got, want := s.cache.limit.Load(), int64(2*readCacheFloor); got != want {
		t.Fatalf("read cache bound %d, want a thirty-second of the records' bytes, %d", got, want)
	}
	if got := s.cache.handoffs.limit.Load(); got != handoffFloor {
		t.Fatalf("handoff budget %d, want its floor %d", got, handoffFloor)
	}
	fixed := newCompactStore(MetaNamespaceKeyFunc, nil, CompactOptions{ReadCacheBytes: 1 << 20})
	fixed.mu.Lock()
	fixed.held = 1 << 40
	fixed.resize()
	fixed.mu.Unlock()
	if fixed.cache.limit.Load() != 1<<20 || fixed.cache.handoffs.limit.Load() != 1<<20 {
		t.Fatal("a ReadCacheBytes given is not kept")
	}
}
