package bench

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache/internal/podgen"
)

// BenchmarkWatchPathSideBySide is the cost of a MODIFIED watch event of a
// realistic Pod as a program pays it: the event's bytes decoded on the
// watch's goroutine, as a client's watch decoder does, then through the
// informer (2,000 Pods cached, a namespace index) to a handler that
// counts. The informers run in one process, one after the other, so the
// ratios between them come from one run; -count 6 gives medians. ns/op is
// wall time per event (decoding and the informer overlap on two cores);
// cpu-ns/op is the process's CPU time per event, every goroutine and the
// collector included, which is what sharing adds to.
//
//	go test -run '^$' -bench BenchmarkWatchPathSideBySide -count 6 ./bench/
func BenchmarkWatchPathSideBySide(b *testing.B) {
	for _, enc := range []string{"json", "protobuf"} {
		for _, impl := range []string{"client-go", "kreflector", "kreflector+share", "kreflector+lean"} {
			b.Run("enc="+enc+"/impl="+impl, func(b *testing.B) { benchWatchPath(b, enc, memInformer(impl, enc)) })
		}
	}
}

// watchPathPods is the number of Pods cached; each is sent again and
// again at a resourceVersion of its own.
const watchPathPods = 2000

func benchWatchPath(b *testing.B, encoding string, newInf func(clientgocache.ListerWatcher) clientgocache.SharedIndexInformer) {
	enc, dec := podgen.Codec(encoding)
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1000"}}
	for i := range watchPathPods {
		list.Items = append(list.Items, *podgen.Pod(i, i+1))
	}
	// 3n+1 versions: each Pod comes back at another resourceVersion.
	events := make([][]byte, 3*watchPathPods+1)
	for k := range events {
		var buf bytes.Buffer
		if err := enc.Encode(podgen.Pod(k%watchPathPods, 2000+k), &buf); err != nil {
			b.Fatal(err)
		}
		events[k] = buf.Bytes()
	}
	lw := newMemLW(memCodecOf(encoding), onePage(encoded(b, enc, list)))
	inf := newInf(lw)
	var seen atomic.Int64
	if _, err := inf.AddEventHandler(clientgocache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, _ interface{}) { seen.Add(1) },
	}); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.Context())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	defer func() { cancel(); <-done }()
	if !clientgocache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		b.Fatal("no sync")
	}
	w := <-lw.opened
	cpu0 := processCPU()
	start := time.Now()
	for k := 0; b.Loop(); k++ {
		obj, _, err := dec.Decode(events[k%len(events)], nil, &corev1.Pod{})
		if err != nil {
			b.Fatal(err)
		}
		if !w.send(watch.Event{Type: watch.Modified, Object: obj}) {
			b.Fatal("the watch was stopped")
		}
	}
	for seen.Load() < int64(b.N) {
		time.Sleep(50 * time.Microsecond)
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// encoded is obj's bytes in enc.
func encoded(b *testing.B, enc apiruntime.Encoder, obj apiruntime.Object) []byte {
	var buf bytes.Buffer
	if err := enc.Encode(obj, &buf); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}
