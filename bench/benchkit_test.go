package bench

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	clientgocache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache"
)

// The kit shared by the benchmarks in bench_test.go: a ListerWatcher that
// serves prebuilt answers, stores with a deterministic finish line, object
// builders, and a meter for per-item figures. Everything here is used the
// same way for both Reflectors.

// reflectorRun runs one Reflector on lw and store until ctx ends.
type reflectorRun func(ctx context.Context, lw *benchLW, store cache.ReflectorStore)

// benchImpls are the Reflectors compared: both get the same expected type,
// name and default options.
var benchImpls = []struct {
	name string
	run  reflectorRun
}{
	{"kreflector", func(ctx context.Context, lw *benchLW, store cache.ReflectorStore) {
		cache.NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, cache.ReflectorOptions{Name: "bench"}).RunWithContext(ctx)
	}},
	{"client-go", func(ctx context.Context, lw *benchLW, store cache.ReflectorStore) {
		clientgocache.NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, clientgocache.ReflectorOptions{Name: "bench"}).RunWithContext(ctx)
	}},
}

// forEachImpl runs body as one sub-benchmark per Reflector.
func forEachImpl(b *testing.B, body func(b *testing.B, run reflectorRun)) {
	for _, impl := range benchImpls {
		b.Run("impl="+impl.name, func(b *testing.B) { body(b, impl.run) })
	}
}

// runUntil starts run, waits until done closes, then cancels it and waits
// for it to return, so no goroutine of the Reflector outlives the call.
// A watchdog turns a Reflector that never gets there into a failure
// instead of a hang.
func runUntil(b *testing.B, run reflectorRun, lw *benchLW, store cache.ReflectorStore, done <-chan struct{}) {
	ctx, cancel := context.WithCancel(b.Context())
	var wg sync.WaitGroup
	wg.Go(func() { run(ctx, lw, store) })
	watchdog := time.NewTimer(2 * time.Minute)
	select {
	case <-done:
	case <-watchdog.C:
		lists, watches := lw.calls()
		b.Errorf("reflector did not finish; LIST calls %v, WATCH calls %v", lists, watches)
	}
	watchdog.Stop()
	cancel()
	wg.Wait()
}

// benchLW serves prebuilt LIST pages, keyed by the continue token that asks
// for them, and prebuilt watches, in order. Each answer is served once and
// then forgotten, as a client forgets a page once it has decoded and handed
// it over. When no watch is left it serves idle ones. It records the
// options of every call.
type benchLW struct {
	// watchList says the server supports WatchList; without it the
	// ListerWatcher reports IsWatchListSemanticsUnSupported and both
	// Reflectors LIST.
	watchList bool

	mu      sync.Mutex
	pages   map[string]*corev1.ConfigMapList
	queued  []*benchWatch
	lists   []metav1.ListOptions
	watches []metav1.ListOptions
}

func (l *benchLW) IsWatchListSemanticsUnSupported() bool { return !l.watchList }

// calls returns the options of the LIST and WATCH calls made so far.
func (l *benchLW) calls() (lists, watches []metav1.ListOptions) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]metav1.ListOptions(nil), l.lists...), append([]metav1.ListOptions(nil), l.watches...)
}

func (l *benchLW) List(opts metav1.ListOptions) (apiruntime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

func (l *benchLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

func (l *benchLW) ListWithContext(_ context.Context, opts metav1.ListOptions) (apiruntime.Object, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lists = append(l.lists, opts)
	page, ok := l.pages[opts.Continue]
	if !ok {
		return nil, fmt.Errorf("bench: no page for continue token %q", opts.Continue)
	}
	delete(l.pages, opts.Continue)
	return page, nil
}

func (l *benchLW) WatchWithContext(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.watches = append(l.watches, opts)
	if len(l.queued) == 0 {
		return &benchWatch{ch: make(chan watch.Event)}, nil
	}
	w := l.queued[0]
	l.queued[0] = nil
	l.queued = l.queued[1:]
	return w, nil
}

// benchWatch is a watch whose events are all queued before it is served,
// so feeding costs the Reflector one channel receive per event. The
// channel is never closed: both Reflectors leave a watch when their
// context ends, and Stop has nothing to release.
type benchWatch struct{ ch chan watch.Event }

func (w *benchWatch) Stop()                          {}
func (w *benchWatch) ResultChan() <-chan watch.Event { return w.ch }

// queuedWatch returns a watch with events queued in order.
func queuedWatch(events []watch.Event) *benchWatch {
	w := &benchWatch{ch: make(chan watch.Event, len(events))}
	for _, e := range events {
		w.ch <- e
	}
	return w
}

// noopStore stores nothing; it counts the Adds and Updates it is given and
// closes done at the want-th. Only the Reflector's goroutine calls it.
type noopStore struct {
	want, seen int
	done       chan struct{}
}

func newNoopStore(want int) *noopStore { return &noopStore{want: want, done: make(chan struct{})} }

func (s *noopStore) count() error {
	s.seen++
	if s.seen == s.want {
		close(s.done)
	}
	return nil
}

func (s *noopStore) Add(interface{}) error               { return s.count() }
func (s *noopStore) Update(interface{}) error            { return s.count() }
func (s *noopStore) Delete(interface{}) error            { return nil }
func (s *noopStore) Replace([]interface{}, string) error { return nil }
func (s *noopStore) Resync() error                       { return nil }

// finishStore is client-go's cache.NewStore(MetaNamespaceKeyFunc), the same
// store under both Reflectors, with a finish line: done closes once
// Replace has been called and wantUpdates Updates have followed it. Only
// the Reflector's goroutine calls it.
type finishStore struct {
	clientgocache.Store
	wantUpdates int
	// replaced is the length of the last Replace (-1 before any) and
	// replacedRV its resourceVersion.
	replaced   int
	replacedRV string
	updates    int
	done       chan struct{}
	closed     bool
}

func newFinishStore(wantUpdates int) *finishStore {
	return &finishStore{
		Store:       clientgocache.NewStore(clientgocache.MetaNamespaceKeyFunc),
		wantUpdates: wantUpdates,
		replaced:    -1,
		done:        make(chan struct{}),
	}
}

func (s *finishStore) Replace(list []interface{}, rv string) error {
	err := s.Store.Replace(list, rv)
	s.replaced, s.replacedRV = len(list), rv
	s.check()
	return err
}

func (s *finishStore) Update(obj interface{}) error {
	err := s.Store.Update(obj)
	s.updates++
	s.check()
	return err
}

func (s *finishStore) check() {
	if !s.closed && s.replaced >= 0 && s.updates == s.wantUpdates {
		s.closed = true
		close(s.done)
	}
}

// fillConfigMap sets c to object i at resourceVersion rv, with every string
// and map freshly allocated as a decoder would.
func fillConfigMap(c *corev1.ConfigMap, i, rv int) {
	id := strconv.Itoa(i)
	c.Name = "app-config-" + id
	c.Namespace = "team-" + strconv.Itoa(i%40)
	c.UID = types.UID(fmt.Sprintf("5f0c1d2e-7a41-4c3b-9e21-%012d", i))
	c.ResourceVersion = strconv.Itoa(rv)
	c.CreationTimestamp = metav1.Unix(1_700_000_000+int64(i), 0)
	c.Labels = map[string]string{"app": "app-" + strconv.Itoa(i%100), "tier": "backend"}
	c.Annotations = map[string]string{"kreflector.dev/owner": "team-" + id}
	c.Data = map[string]string{
		"settings.yaml": "replicas: 3\nname: app-config-" + id + "\nlogLevel: info\nfeatures: [a, b, c]\n",
		"revision":      strconv.Itoa(rv),
	}
}

// newConfigMap is fillConfigMap on a new object.
func newConfigMap(i, rv int) *corev1.ConfigMap {
	c := &corev1.ConfigMap{}
	fillConfigMap(c, i, rv)
	return c
}

// mixedEvents returns n watch events, one ADDED for three MODIFIED, over
// 5,000 objects, event i at resourceVersion i+2.
func mixedEvents(n int) []watch.Event {
	events := make([]watch.Event, n)
	for i := range events {
		typ := watch.Modified
		if i%4 == 0 {
			typ = watch.Added
		}
		events[i] = watch.Event{Type: typ, Object: newConfigMap(i%5000, 2+i)}
	}
	return events
}

// listPagesOf builds the answer to a LIST of n objects at resourceVersion
// rv in pages of size, as an API server without watch cache pages it: each
// page a fresh list with its own items array, a continue token and the
// remaining item count. Object i has resourceVersion i+1.
func listPagesOf(n, size int, rv string) map[string]*corev1.ConfigMapList {
	pages := make(map[string]*corev1.ConfigMapList, n/size+1)
	token := ""
	for start := 0; start < n; start += size {
		end := min(start+size, n)
		page := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}
		page.Items = make([]corev1.ConfigMap, end-start)
		for j := range page.Items {
			fillConfigMap(&page.Items[j], start+j, start+j+1)
		}
		if end < n {
			page.Continue = "page-" + strconv.Itoa(end)
			page.RemainingItemCount = ptr.To(int64(n - end))
		}
		pages[token] = page
		token = page.Continue
	}
	return pages
}

// initialEventsEnd is the bookmark that closes a WatchList's initial events.
func initialEventsEnd(rv string) watch.Event {
	o := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		ResourceVersion: rv,
		Annotations:     map[string]string{metav1.InitialEventsAnnotationKey: "true"},
	}}
	return watch.Event{Type: watch.Bookmark, Object: o}
}

// itemMeter accumulates, over the timed sections of a benchmark whose
// every iteration handles items objects, the time, allocations and live
// heap, and reports them per item. Inputs are built with the timer
// stopped and are not counted.
type itemMeter struct {
	b       *testing.B
	items   int
	iters   int
	t0      time.Time
	before  runtime.MemStats
	elapsed time.Duration
	mallocs uint64
	bytes   uint64
	live    int64
}

func newItemMeter(b *testing.B, items int) *itemMeter {
	b.StopTimer()
	return &itemMeter{b: b, items: items}
}

// start begins a timed section.
func (m *itemMeter) start() {
	runtime.ReadMemStats(&m.before)
	m.b.StartTimer()
	m.t0 = time.Now()
}

// stop ends a timed section.
func (m *itemMeter) stop() {
	m.elapsed += time.Since(m.t0)
	m.b.StopTimer()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	m.mallocs += after.Mallocs - m.before.Mallocs
	m.bytes += after.TotalAlloc - m.before.TotalAlloc
	m.iters++
}

// addLive records the live heap above base (a liveHeap reading taken
// before the iteration's inputs were built). The caller keeps what it
// measures (the store) reachable until addLive returns.
func (m *itemMeter) addLive(base uint64) {
	m.live += int64(liveHeap()) - int64(base)
}

// syncInto runs lw into store until done as one timed section, and
// records the live heap above base (see addLive) while store is still
// reachable.
func (m *itemMeter) syncInto(run reflectorRun, lw *benchLW, store cache.ReflectorStore, done <-chan struct{}, base uint64) {
	m.start()
	runUntil(m.b, run, lw, store, done)
	m.stop()
	m.addLive(base)
	runtime.KeepAlive(store)
}

// report publishes the per-item figures.
func (m *itemMeter) report() {
	if m.iters == 0 {
		return
	}
	n := float64(m.iters) * float64(m.items)
	m.b.ReportMetric(float64(m.elapsed.Nanoseconds())/n, "ns/item")
	m.b.ReportMetric(float64(m.bytes)/n, "B/item")
	m.b.ReportMetric(float64(m.mallocs)/n, "allocs/item")
	m.b.ReportMetric(float64(m.live)/n, "live-B/item")
	m.b.ReportMetric(float64(m.live)/float64(m.iters)/(1<<20), "live-MB")
}

// liveHeap collects garbage and returns the bytes still reachable.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
