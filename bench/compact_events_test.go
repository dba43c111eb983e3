package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/internal/podgen"
)

// BenchmarkCompactWatchEvents: 2,000 realistic Pods synced, then 20,000
// MODIFIED events of them through client-go's informer, ours, and ours
// compact (with its default read cache, which holds a few hundred of the
// Pods, and with one of 32 MiB, which holds them all), to 3 handlers that
// count, with the namespace index. Reported
// per event: wall time and the process's CPU time (the handlers'
// goroutines included: a compact informer decodes at delivery what its
// read cache does not have).
//
// Two watches (watch=):
//
//   - decoding: each event's Pod is decoded from its protobuf bytes on the
//     watch's own goroutine as the informer takes it, as a client's watch
//     decodes what the server sends; the decode (paid by every
//     implementation alike) is in the figures.
//
//   - flooded: every event is decoded beforehand and queued at once, so
//     the Reflector runs as far ahead of the handlers as it can; a compact
//     informer's queue then carries more than its read cache's bound of
//     decoded objects, and the handlers decode what it does not carry.
//
//     go test -run '^$' -bench BenchmarkCompactWatchEvents -benchtime 3x ./bench/
func BenchmarkCompactWatchEvents(b *testing.B) {
	const pods, events = 2000, 20000
	initial, changed, decodeNs := watchPods(b, pods, events)
	b.Logf("decoding one Pod from protobuf: %.1f µs", decodeNs/1e3)
	impls := []struct {
		name string
		new  informerCtor
	}{
		{"client-go", clientgocache.NewSharedIndexInformer},
		{"kreflector", cache.NewSharedIndexInformer},
		{"kreflector+compact", cache.NewSharedIndexInformerWith(cache.ReflectorOptions{Compact: &cache.CompactOptions{}})},
		// A read cache that holds the 2,000 Pods: an update's old object
		// is there, not decoded.
		{"kreflector+compact+cache32MiB", cache.NewSharedIndexInformerWith(cache.ReflectorOptions{Compact: &cache.CompactOptions{ReadCacheBytes: 32 << 20}})},
	}
	for _, mode := range []string{"decoding", "flooded"} {
		for _, impl := range impls {
			b.Run("watch="+mode+"/impl="+impl.name, func(b *testing.B) {
				var wall, cpu time.Duration
				for b.Loop() {
					lw := &podEventsLW{list: initial, events: changed, decoding: mode == "decoding"}
					inf := impl.new(lw, &corev1.Pod{}, 0, clientgocache.Indexers{clientgocache.NamespaceIndex: clientgocache.MetaNamespaceIndexFunc})
					regs, hs := addHandlers(b, inf, 3, pods+events, 0, 0)
					c0, t0 := processCPU(), time.Now()
					runInformerUntilDone(b, inf, regs, hs)
					wall, cpu = wall+time.Since(t0), cpu+processCPU()-c0
					lw.stop()
				}
				per := float64(b.N * (pods + events))
				b.ReportMetric(float64(wall.Nanoseconds())/per, "wall-ns/event")
				b.ReportMetric(float64(cpu.Nanoseconds())/per, "cpu-ns/event")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// podEvent is a watch event with its Pod as decoded and as sent.
type podEvent struct {
	watch.Event
	wire []byte
}

// watchPods returns n Pods as a PodList at resourceVersion "1", events
// MODIFIED events of them in turn at resourceVersions from 2 on, each
// with its Pod decoded from its protobuf encoding and the encoding, and
// the time a decode took.
func watchPods(b *testing.B, n, events int) (*corev1.PodList, []podEvent, float64) {
	enc, _ := podgen.Codec("protobuf")
	wire := func(p *corev1.Pod) []byte {
		p.APIVersion, p.Kind = "v1", "Pod"
		raw, err := apiruntime.Encode(enc, p)
		if err != nil {
			b.Fatal(err)
		}
		return raw
	}
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}
	for i := range n {
		list.Items = append(list.Items, *decodePod(wire(podgen.Pod(i, 1))))
	}
	out := make([]podEvent, events)
	start := time.Now()
	for i := range out {
		raw := wire(podgen.Pod(i%n, 2+i))
		out[i] = podEvent{Event: watch.Event{Type: watch.Modified, Object: decodePod(raw)}, wire: raw}
	}
	return list, out, float64(time.Since(start).Nanoseconds()) / float64(events)
}

// podDecoder is a typed client's decoder.
var _, podDecoder = podgen.Codec("protobuf")

// decodePod decodes a Pod from protobuf as a typed client does.
func decodePod(raw []byte) *corev1.Pod {
	obj, err := apiruntime.Decode(podDecoder, raw)
	if err != nil {
		panic(err)
	}
	return obj.(*corev1.Pod)
}

// podEventsLW lists list, then serves events on its first watch
// (decoding each from its bytes as it is taken, if decoding is set);
// later watches stay open and silent until stopped.
type podEventsLW struct {
	list     *corev1.PodList
	events   []podEvent
	decoding bool
	watched  bool
	// done ends the decoding watch's goroutine; wg joins it.
	done chan struct{}
	wg   sync.WaitGroup
}

// stop ends the decoding watch's goroutine, if any, and waits for it.
func (l *podEventsLW) stop() {
	if l.done != nil {
		close(l.done)
	}
	l.wg.Wait()
}

func (l *podEventsLW) List(opts metav1.ListOptions) (apiruntime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

func (l *podEventsLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

func (l *podEventsLW) ListWithContext(context.Context, metav1.ListOptions) (apiruntime.Object, error) {
	return l.list.DeepCopy(), nil
}

func (l *podEventsLW) WatchWithContext(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if l.watched {
		return watch.NewFake(), nil
	}
	if opts.ResourceVersion != "1" {
		return nil, fmt.Errorf("watch from %q, want 1", opts.ResourceVersion)
	}
	l.watched = true
	if !l.decoding {
		evs := make([]watch.Event, len(l.events))
		for i, e := range l.events {
			evs[i] = e.Event
		}
		return queuedWatch(evs), nil
	}
	w := &benchWatch{ch: make(chan watch.Event)}
	l.done = make(chan struct{})
	l.wg.Go(func() {
		for _, e := range l.events {
			select {
			case w.ch <- watch.Event{Type: e.Type, Object: decodePod(e.wire)}:
			case <-l.done:
				return
			}
		}
	})
	return w, nil
}

// IsWatchListSemanticsUnSupported: the informers LIST.
func (l *podEventsLW) IsWatchListSemanticsUnSupported() bool { return true }
