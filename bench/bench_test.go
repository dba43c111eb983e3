package bench

import (
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// Benchmarks of this Reflector against client-go's on identical work, in
// the same run: each benchmark has the sub-benchmarks impl=kreflector and
// impl=client-go. Per-item figures cover the timed part of an iteration
// (Reflector start to Run returned); inputs are built with the timer
// stopped. live-B/item and live-MB are the heap still reachable once Run
// has returned, with the store kept, above the heap before the inputs
// were built.
//
//	go test -run '^$' -bench . -benchmem -count 6 -timeout 60m ./bench/

const (
	// benchEvents is the number of watch events per BenchmarkWatchEvents
	// iteration.
	benchEvents = 20_000
	// benchObjects is the number of objects a LIST or WatchList returns.
	benchObjects = 50_000
	// benchPageSize is the page size of a paginated LIST (client-go's and
	// our default).
	benchPageSize = 500
	// benchListRV is the resourceVersion of the listed state.
	benchListRV = "100000"
)

// BenchmarkWatchEvents: watch events (one ADDED for three MODIFIED) into a
// store that does nothing, after a LIST of one object. Per event.
func BenchmarkWatchEvents(b *testing.B) { benchWatchEvents(b, benchEvents) }

// BenchmarkRunOverhead: what a run costs apart from its events: start, a
// LIST of one object, a watch with one event, stop. Per run. Stack growth
// of the Reflector's goroutines shows here (see docs/benchmarks.md).
func BenchmarkRunOverhead(b *testing.B) { benchWatchEvents(b, 1) }

// benchWatchEvents runs a Reflector over a LIST of one object and a watch
// of n mixed events per iteration; per-item figures are per event.
func benchWatchEvents(b *testing.B, n int) {
	events := mixedEvents(n)
	forEachImpl(b, func(b *testing.B, run reflectorRun) {
		m := newItemMeter(b, len(events))
		for range b.N {
			base := liveHeap()
			tiny := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: []corev1.ConfigMap{*newConfigMap(0, 1)}}
			lw := &benchLW{pages: map[string]*corev1.ConfigMapList{"": tiny}, queued: []*benchWatch{queuedWatch(events)}}
			store := newNoopStore(len(events))
			m.syncInto(run, lw, store, store.done, base)
			wantListed(b, lw, 1)
		}
		m.report()
	})
}

// BenchmarkRelist: a LIST at RV "0" answered in pages of 500, Replaced into
// client-go's store. Per object.
func BenchmarkRelist(b *testing.B) {
	forEachImpl(b, func(b *testing.B, run reflectorRun) {
		m := newItemMeter(b, benchObjects)
		for range b.N {
			base := liveHeap()
			lw := &benchLW{pages: listPagesOf(benchObjects, benchPageSize, benchListRV)}
			store := newFinishStore(0)
			m.syncInto(run, lw, store, store.done, base)
			wantListed(b, lw, benchObjects/benchPageSize)
			wantReplaced(b, store, benchObjects)
		}
		m.report()
	})
}

// BenchmarkWatchListSync: the same objects streamed as one WatchList (ADDED
// events, then the initial-events-end bookmark), Replaced into client-go's
// store. Per object.
func BenchmarkWatchListSync(b *testing.B) {
	forEachImpl(b, func(b *testing.B, run reflectorRun) {
		m := newItemMeter(b, benchObjects)
		for range b.N {
			base := liveHeap()
			events := make([]watch.Event, 0, benchObjects+1)
			for i := range benchObjects {
				events = append(events, watch.Event{Type: watch.Added, Object: newConfigMap(i, i+1)})
			}
			events = append(events, initialEventsEnd(benchListRV))
			lw := &benchLW{watchList: true, queued: []*benchWatch{queuedWatch(events)}}
			events = nil
			store := newFinishStore(0)
			m.syncInto(run, lw, store, store.done, base)
			wantStreamed(b, lw)
			wantReplaced(b, store, benchObjects)
		}
		m.report()
	})
}

// BenchmarkRelistThenModify: BenchmarkRelist followed by a watch that
// modifies every other object, so that each listed page has objects both
// replaced and kept. live-B/item shows whether the kept objects pin their
// whole pages. Per listed object.
func BenchmarkRelistThenModify(b *testing.B) {
	forEachImpl(b, func(b *testing.B, run reflectorRun) {
		m := newItemMeter(b, benchObjects)
		for range b.N {
			base := liveHeap()
			events := make([]watch.Event, 0, benchObjects/2)
			for i := 0; i < benchObjects; i += 2 {
				events = append(events, watch.Event{Type: watch.Modified, Object: newConfigMap(i, 100_001+i)})
			}
			lw := &benchLW{pages: listPagesOf(benchObjects, benchPageSize, benchListRV), queued: []*benchWatch{queuedWatch(events)}}
			events = nil
			store := newFinishStore(benchObjects / 2)
			m.syncInto(run, lw, store, store.done, base)
			wantListed(b, lw, benchObjects/benchPageSize)
			wantReplaced(b, store, benchObjects)
		}
		m.report()
	})
}

// wantListed fails the benchmark unless the Reflector made pages LIST
// calls (the first at RV "0" with limit 500, the others continuing it) and
// no WatchList request.
func wantListed(b *testing.B, lw *benchLW, pages int) {
	b.Helper()
	lists, watches := lw.calls()
	if len(lists) != pages || lists[0].ResourceVersion != "0" || lists[0].Limit != benchPageSize {
		b.Fatalf("want %d LIST calls, the first at RV 0 limit %d; got %+v", pages, benchPageSize, lists)
	}
	for i, o := range lists[1:] {
		if o.Continue != "page-"+strconv.Itoa((i+1)*benchPageSize) {
			b.Fatalf("LIST %d does not continue the previous page: %+v", i+1, o)
		}
	}
	for _, o := range watches {
		if o.SendInitialEvents != nil {
			b.Fatalf("WatchList request from a Reflector told it is unsupported: %+v", o)
		}
	}
}

// wantStreamed fails the benchmark unless the Reflector synced through one
// WatchList request and made no LIST call.
func wantStreamed(b *testing.B, lw *benchLW) {
	b.Helper()
	lists, watches := lw.calls()
	if len(lists) != 0 || len(watches) == 0 {
		b.Fatalf("want WatchList and no LIST; got LIST %+v, WATCH %+v", lists, watches)
	}
	o := watches[0]
	if o.SendInitialEvents == nil || !*o.SendInitialEvents || o.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan || !o.AllowWatchBookmarks {
		b.Fatalf("first WATCH is not a WatchList request: %+v", o)
	}
}

// wantReplaced fails the benchmark unless the store was Replaced with n
// objects at benchListRV.
func wantReplaced(b *testing.B, store *finishStore, n int) {
	b.Helper()
	if store.replaced != n || store.replacedRV != benchListRV {
		b.Fatalf("store Replaced with %d objects at RV %q, want %d at %q", store.replaced, store.replacedRV, n, benchListRV)
	}
}
