package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
)

// What a replica received, for the "stats" records: the informer's own
// Stats, and what came out of the ConfigMaps' ListerWatcher (counted
// below the Reflector, so it includes what the Reflector drops unseen by
// its Stats, such as the watch events a merged reshard's LIST already
// covered, and the ring's replays of deletes).

// statsRecord is the "stats" field of a "stats" record.
type statsRecord struct {
	// From the informer's Stats().Reflector; maps hold non-zero counts.
	ItemsListed      uint64            `json:"itemsListed"`
	Lists            map[string]uint64 `json:"lists,omitempty"`
	WatchLists       map[string]uint64 `json:"watchLists,omitempty"`
	Events           map[string]uint64 `json:"events,omitempty"`
	ReshardsMerged   uint64            `json:"reshardsMerged"`
	ReshardFallbacks map[string]uint64 `json:"reshardFallbacks,omitempty"`
	// Received from the ListerWatcher: LISTs made and the items they
	// returned; WatchList streams and the objects of their initial
	// events; watch events by type past any initial events.
	WireLists          uint64            `json:"wireLists"`
	WireListItems      uint64            `json:"wireListItems"`
	WireWatchLists     uint64            `json:"wireWatchLists"`
	WireWatchListItems uint64            `json:"wireWatchListItems"`
	WireEvents         map[string]uint64 `json:"wireEvents,omitempty"`
	// Bytes of the bodies of the ConfigMap requests' responses, as the
	// client read them (after any gzip decoding).
	WireBytes uint64 `json:"wireBytes"`
}

// received counts what the ConfigMaps' ListerWatcher handed the informer;
// one per process.
var received receivedCounts

type receivedCounts struct {
	lists, listItems, watchLists, watchListItems, bytes atomic.Uint64

	mu     sync.Mutex
	events map[watch.EventType]uint64
}

func (c *receivedCounts) event(t watch.EventType) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.events == nil {
		c.events = map[watch.EventType]uint64{}
	}
	c.events[t]++
}

// fill copies the counts into rec.
func (c *receivedCounts) fill(rec *statsRecord) {
	rec.WireLists, rec.WireListItems = c.lists.Load(), c.listItems.Load()
	rec.WireWatchLists, rec.WireWatchListItems = c.watchLists.Load(), c.watchListItems.Load()
	rec.WireBytes = c.bytes.Load()
	c.mu.Lock()
	defer c.mu.Unlock()
	for t, n := range c.events {
		if rec.WireEvents == nil {
			rec.WireEvents = map[string]uint64{}
		}
		rec.WireEvents[string(t)] = n
	}
}

// countingLW passes every call to inner and counts what comes back.
type countingLW struct {
	inner cache.ListerWatcherWithContext
	c     *receivedCounts
	// watchListRefused is inner's IsWatchListSemanticsUnSupported.
	watchListRefused bool
}

func countReceived(lw clientgocache.ListerWatcher, c *receivedCounts) *countingLW {
	l := &countingLW{inner: cache.ToListerWatcherWithContext(lw), c: c}
	if d, ok := lw.(interface{ IsWatchListSemanticsUnSupported() bool }); ok {
		l.watchListRefused = d.IsWatchListSemanticsUnSupported()
	}
	return l
}

func (l *countingLW) IsWatchListSemanticsUnSupported() bool { return l.watchListRefused }

func (l *countingLW) List(o metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), o)
}

func (l *countingLW) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), o)
}

func (l *countingLW) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	obj, err := l.inner.ListWithContext(ctx, o)
	if err == nil {
		l.c.lists.Add(1)
		l.c.listItems.Add(uint64(meta.LenList(obj)))
	}
	return obj, err
}

func (l *countingLW) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	w, err := l.inner.WatchWithContext(ctx, o)
	if err != nil {
		return nil, err
	}
	initial := o.SendInitialEvents != nil && *o.SendInitialEvents
	if initial {
		l.c.watchLists.Add(1)
	}
	cw := &countingWatch{inner: w, c: l.c, initial: initial, out: make(chan watch.Event), stop: make(chan struct{})}
	go cw.forward()
	return cw, nil
}

// countingWatch forwards inner's events, counting them: while initial is
// set, the ADDED events of a WatchList's initial state count as listed
// objects, up to the bookmark that ends it.
type countingWatch struct {
	inner   watch.Interface
	c       *receivedCounts
	initial bool
	out     chan watch.Event
	stop    chan struct{}
	once    sync.Once
}

func (w *countingWatch) forward() {
	defer close(w.out)
	for ev := range w.inner.ResultChan() {
		w.count(ev)
		select {
		case w.out <- ev:
		case <-w.stop:
			return
		}
	}
}

func (w *countingWatch) count(ev watch.Event) {
	if w.initial {
		switch ev.Type {
		case watch.Added:
			w.c.watchListItems.Add(1)
			return
		case watch.Bookmark:
			if m, err := meta.Accessor(ev.Object); err == nil && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
				w.initial = false
			}
		default:
			w.initial = false
		}
	}
	w.c.event(ev.Type)
}

func (w *countingWatch) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.inner.Stop()
	})
}

func (w *countingWatch) ResultChan() <-chan watch.Event { return w.out }

// countBytes wraps a transport to count the response bytes of requests
// on ConfigMaps into c.
func countBytes(c *receivedCounts) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		return byteCountingTransport{inner: rt, c: c}
	}
}

type byteCountingTransport struct {
	inner http.RoundTripper
	c     *receivedCounts
}

func (t byteCountingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.inner.RoundTrip(req)
	if err == nil && resp.Body != nil && strings.HasSuffix(req.URL.Path, "/configmaps") {
		resp.Body = &byteCountingBody{ReadCloser: resp.Body, c: t.c}
	}
	return resp, err
}

type byteCountingBody struct {
	io.ReadCloser
	c *receivedCounts
}

func (b *byteCountingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.c.bytes.Add(uint64(n))
	return n, err
}

// statser is what the replica's informers report Stats through.
type statser interface{ Stats() cache.InformerStats }

// statsReporter writes a "stats" record every period (none if period is
// 0) until ctx ends, and one more when told the informer has stopped.
type statsReporter struct {
	log  *logger
	inf  statser
	done chan struct{}
}

func startStats(ctx context.Context, period time.Duration, log *logger, inf statser) *statsReporter {
	s := &statsReporter{log: log, inf: inf, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		if period <= 0 {
			return
		}
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				s.write()
			}
		}
	}()
	return s
}

// final writes the last record, once the informer has stopped (its
// counts are final then).
func (s *statsReporter) final() {
	<-s.done
	s.write()
}

func (s *statsReporter) write() {
	st := s.inf.Stats().Reflector
	rec := &statsRecord{
		ItemsListed:      st.ItemsListed,
		Lists:            nonZero(st.Lists),
		WatchLists:       nonZero(st.WatchLists),
		Events:           nonZero(st.Events),
		ReshardsMerged:   st.ReshardsMerged,
		ReshardFallbacks: nonZero(st.ReshardFallbacks),
	}
	received.fill(rec)
	s.log.write(record{Kind: "stats", Stats: rec})
}

// nonZero returns the non-zero counts of m by their names; nil if none.
func nonZero[K ~string](m map[K]uint64) map[string]uint64 {
	var out map[string]uint64
	for k, n := range m {
		if n == 0 {
			continue
		}
		if out == nil {
			out = map[string]uint64{}
		}
		out[string(k)] = n
	}
	return out
}
