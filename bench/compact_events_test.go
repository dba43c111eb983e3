package bench

import (
	"context"
	"fmt"
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
// MODIFIED events of them (each Pod decoded from protobuf beforehand, as
// a client's watch decodes it) through client-go's informer, ours, and
// ours compact, to 3 handlers that count, with the namespace index.
// Reported per event: wall time and the process's CPU time (the handlers'
// goroutines included: a compact informer decodes at delivery what its
// read cache no longer has). Decoding a Pod from protobuf, which every
// implementation pays once per event before this, is reported apart.
//
//	go test -run '^$' -bench BenchmarkCompactWatchEvents -benchtime 3x ./bench/
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
	}
	for _, impl := range impls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			var wall, cpu time.Duration
			for b.Loop() {
				lw := &podEventsLW{list: initial, events: changed}
				inf := impl.new(lw, &corev1.Pod{}, 0, clientgocache.Indexers{clientgocache.NamespaceIndex: clientgocache.MetaNamespaceIndexFunc})
				regs, hs := addHandlers(b, inf, 3, pods+events, 0, 0)
				c0, t0 := processCPU(), time.Now()
				runInformerUntilDone(b, inf, regs, hs)
				wall, cpu = wall+time.Since(t0), cpu+processCPU()-c0
			}
			per := float64(b.N * (pods + events))
			b.ReportMetric(float64(wall.Nanoseconds())/per, "wall-ns/event")
			b.ReportMetric(float64(cpu.Nanoseconds())/per, "cpu-ns/event")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// watchPods returns n Pods as a PodList at resourceVersion "1", events
// MODIFIED events of them in turn at resourceVersions from 2 on, each Pod
// decoded from its protobuf encoding, and the time a decode took.
func watchPods(b *testing.B, n, events int) (*corev1.PodList, []watch.Event, float64) {
	enc, dec := podgen.Codec("protobuf")
	decode := func(p *corev1.Pod) *corev1.Pod {
		p.APIVersion, p.Kind = "v1", "Pod"
		raw, err := apiruntime.Encode(enc, p)
		if err != nil {
			b.Fatal(err)
		}
		obj, err := apiruntime.Decode(dec, raw)
		if err != nil {
			b.Fatal(err)
		}
		return obj.(*corev1.Pod)
	}
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}
	for i := range n {
		list.Items = append(list.Items, *decode(podgen.Pod(i, 1)))
	}
	out := make([]watch.Event, events)
	start := time.Now()
	for i := range out {
		out[i] = watch.Event{Type: watch.Modified, Object: decode(podgen.Pod(i%n, 2+i))}
	}
	return list, out, float64(time.Since(start).Nanoseconds()) / float64(events)
}

// podEventsLW lists list, then serves events on its first watch; later
// watches stay open and silent until stopped.
type podEventsLW struct {
	list    *corev1.PodList
	events  []watch.Event
	watched bool
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
	return queuedWatch(l.events), nil
}

// IsWatchListSemanticsUnSupported: the informers LIST.
func (l *podEventsLW) IsWatchListSemanticsUnSupported() bool { return true }
