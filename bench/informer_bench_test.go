package bench

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
)

// Benchmarks of our SharedIndexInformer against client-go's on identical
// ListerWatcher answers, in the same run (sub-benchmarks impl=kreflector
// and impl=client-go), with handlers that only count:
//
//	go test -run '^$' -bench Informer -benchmem -count 6 -timeout 60m ./bench/

// informerCtor is the constructor under test; client-go's and ours have
// the same signature.
type informerCtor func(lw clientgocache.ListerWatcher, example apiruntime.Object, resync time.Duration, indexers clientgocache.Indexers) clientgocache.SharedIndexInformer

var informerImpls = []struct {
	name string
	new  informerCtor
}{
	{"kreflector", cache.NewSharedIndexInformer},
	{"client-go", clientgocache.NewSharedIndexInformer},
}

// forEachInformer runs body as one sub-benchmark per informer.
func forEachInformer(b *testing.B, body func(b *testing.B, ctor informerCtor)) {
	for _, impl := range informerImpls {
		b.Run("impl="+impl.name, func(b *testing.B) { body(b, impl.new) })
	}
}

// countingHandler counts the notifications it gets and closes done at the
// want-th. delay, if set, is spent in every call: on the CPU, or with
// sleep blocked, as a handler waiting on a remote call is.
type countingHandler struct {
	want  int64
	seen  atomic.Int64
	delay time.Duration
	sleep bool
	done  chan struct{}
}

func newCountingHandler(want int, delay time.Duration) *countingHandler {
	return &countingHandler{want: int64(want), delay: delay, done: make(chan struct{})}
}

func (h *countingHandler) count() {
	switch {
	case h.sleep:
		time.Sleep(h.delay)
	case h.delay > 0:
		spin(h.delay)
	}
	if h.seen.Add(1) == h.want {
		close(h.done)
	}
}

// spin burns d of CPU time without sleeping, as a handler doing work would.
func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

func (h *countingHandler) OnAdd(interface{}, bool)           { h.count() }
func (h *countingHandler) OnUpdate(interface{}, interface{}) { h.count() }
func (h *countingHandler) OnDelete(interface{})              { h.count() }

// runInformerUntilDone starts inf, waits until every handler's done closes (and,
// with synced, every registration reports HasSynced), then stops it and
// waits for Run to return.
func runInformerUntilDone(b *testing.B, inf clientgocache.SharedIndexInformer, regs []clientgocache.ResourceEventHandlerRegistration, handlers []*countingHandler) {
	ctx, cancel := context.WithCancel(b.Context())
	var wg sync.WaitGroup
	wg.Go(func() { inf.RunWithContext(ctx) })
	watchdog := time.NewTimer(5 * time.Minute)
	defer watchdog.Stop()
	for _, h := range handlers {
		select {
		case <-h.done:
		case <-watchdog.C:
			b.Errorf("handler saw %d of %d notifications", h.seen.Load(), h.want)
		}
	}
	for _, reg := range regs {
		for !reg.HasSynced() {
			runtime.Gosched()
		}
	}
	cancel()
	wg.Wait()
}

// addHandlers adds n counting handlers expecting want notifications each;
// the first slow ones spend slowDelay per call.
func addHandlers(b *testing.B, inf clientgocache.SharedIndexInformer, n, want, slow int, slowDelay time.Duration) ([]clientgocache.ResourceEventHandlerRegistration, []*countingHandler) {
	var regs []clientgocache.ResourceEventHandlerRegistration
	var hs []*countingHandler
	for i := range n {
		d := time.Duration(0)
		if i < slow {
			d = slowDelay
		}
		h := newCountingHandler(want, d)
		reg, err := inf.AddEventHandler(h)
		if err != nil {
			b.Fatal(err)
		}
		regs, hs = append(regs, reg), append(hs, h)
	}
	return regs, hs
}

// twoIndexes are the indexes of the sync benchmark.
func twoIndexes() clientgocache.Indexers {
	return clientgocache.Indexers{
		clientgocache.NamespaceIndex: clientgocache.MetaNamespaceIndexFunc,
		"app": func(obj interface{}) ([]string, error) {
			return []string{obj.(*corev1.ConfigMap).Labels["app"]}, nil
		},
	}
}

// BenchmarkInformerWatchEvents: 100,000 watch events (one ADDED for three
// MODIFIED) through the informer to 3 handlers that count. Per event.
func BenchmarkInformerWatchEvents(b *testing.B) {
	const n = 100_000
	events := mixedEvents(n)
	forEachInformer(b, func(b *testing.B, ctor informerCtor) {
		m := newItemMeter(b, n)
		for range b.N {
			tiny := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}
			lw := &benchLW{pages: map[string]*corev1.ConfigMapList{"": tiny}, queued: []*benchWatch{queuedWatch(events)}}
			inf := ctor(lw, &corev1.ConfigMap{}, 0, clientgocache.Indexers{})
			regs, hs := addHandlers(b, inf, 3, n, 0, 0)
			m.start()
			runInformerUntilDone(b, inf, regs, hs)
			m.stop()
		}
		m.report()
	})
}

// BenchmarkInformerSync: the initial sync of 50,000 ConfigMaps (WatchList,
// and LIST in pages of 500) into an indexer with 2 indexes and 3 handlers,
// until every registration HasSynced. Per object.
func BenchmarkInformerSync(b *testing.B) {
	for _, mode := range []string{"WatchList", "LIST"} {
		b.Run("mode="+mode, func(b *testing.B) {
			forEachInformer(b, func(b *testing.B, ctor informerCtor) {
				m := newItemMeter(b, benchObjects)
				for range b.N {
					base := liveHeap()
					lw := syncAnswers(mode)
					inf := ctor(lw, &corev1.ConfigMap{}, 0, twoIndexes())
					regs, hs := addHandlers(b, inf, 3, benchObjects, 0, 0)
					m.start()
					runInformerUntilDone(b, inf, regs, hs)
					m.stop()
					m.addLive(base)
					if got := len(inf.GetIndexer().ListKeys()); got != benchObjects {
						b.Fatalf("indexer holds %d objects, want %d", got, benchObjects)
					}
					runtime.KeepAlive(inf)
				}
				m.report()
			})
		})
	}
}

// syncAnswers is the server side of one initial sync: a WatchList stream of
// benchObjects, or the same objects in LIST pages.
func syncAnswers(mode string) *benchLW {
	if mode == "LIST" {
		return &benchLW{pages: listPagesOf(benchObjects, benchPageSize, benchListRV)}
	}
	events := make([]watch.Event, 0, benchObjects+1)
	for i := range benchObjects {
		events = append(events, watch.Event{Type: watch.Added, Object: newConfigMap(i, i+1)})
	}
	events = append(events, initialEventsEnd(benchListRV))
	return &benchLW{watchList: true, queued: []*benchWatch{queuedWatch(events)}}
}

// BenchmarkInformerSlowHandler: 2,000 watch events to 3 handlers that
// each spend 100µs of CPU per call; with slow=1 one of them instead waits
// 1ms per call, 10x as long (it sleeps, as a handler blocked on a remote
// call does, so that on a small machine it does not take the fast
// handlers' CPU). Reported: the time until the fast handlers are done
// (fast-ns/event), which a slow handler must not raise.
func BenchmarkInformerSlowHandler(b *testing.B) {
	const n = 2_000
	const fastDelay = 100 * time.Microsecond
	events := make([]watch.Event, n)
	for i := range events {
		events[i] = watch.Event{Type: watch.Modified, Object: newConfigMap(i%5000, 2+i)}
	}
	for _, slow := range []int{0, 1} {
		b.Run("slow="+strconv.Itoa(slow), func(b *testing.B) {
			forEachInformer(b, func(b *testing.B, ctor informerCtor) {
				var fast time.Duration
				var backlog int
				for range b.N {
					tiny := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}
					lw := &benchLW{pages: map[string]*corev1.ConfigMapList{"": tiny}, queued: []*benchWatch{queuedWatch(events)}}
					inf := ctor(lw, &corev1.ConfigMap{}, 0, clientgocache.Indexers{})
					_, hs := addHandlers(b, inf, 3, n, 0, 0)
					for _, h := range hs[:slow] {
						h.delay, h.sleep = 10*fastDelay, true
					}
					for _, h := range hs[slow:] {
						h.delay = fastDelay
					}
					d, stats := timeFastHandlers(b, inf, hs, slow)
					fast += d
					if stats != nil && slow > 0 {
						backlog = max(backlog, stats.Handlers[0].MaxBacklog)
					}
				}
				b.ReportMetric(float64(fast.Nanoseconds())/float64(b.N)/n, "fast-ns/event")
				if slow > 0 {
					// What our Stats showed of the slow handler's backlog
					// when the fast ones were done (0 for client-go's,
					// which has no such figure).
					b.ReportMetric(float64(backlog), "slow-backlog")
				}
			})
		})
	}
}

// timeFastHandlers runs inf until every handler is done and returns how
// long the handlers after the first slow ones took to be done, and, for
// our informer, its Stats at that moment.
func timeFastHandlers(b *testing.B, inf clientgocache.SharedIndexInformer, hs []*countingHandler, slow int) (time.Duration, *cache.InformerStats) {
	ctx, cancel := context.WithCancel(b.Context())
	var wg sync.WaitGroup
	wg.Go(func() { inf.RunWithContext(ctx) })
	start := time.Now()
	for _, h := range hs[slow:] {
		<-h.done
	}
	fast := time.Since(start)
	var stats *cache.InformerStats
	if ours, ok := inf.(cache.InformerHealthReporter); ok {
		s := ours.Stats()
		stats = &s
	}
	for _, h := range hs[:slow] {
		<-h.done
	}
	cancel()
	wg.Wait()
	return fast, stats
}
