//go:build unix

package watchdecode

import (
	"bytes"
	"fmt"
	"io"
	"syscall"
	"testing"

	"k8s.io/apimachinery/pkg/watch"

	"github.com/kreflector/cache/internal/podgen"
)

// benchPods is the length of the benchmarks' stream: a WatchList's
// initial events.
const benchPods = 10_000

// BenchmarkWatchList decodes a stream of benchPods realistic Pods as
// ADDED events, JSON and protobuf: client-go's watcher, then ours at 1
// and 2 workers. One op is the whole stream, received by one consumer.
func BenchmarkWatchList(b *testing.B) {
	for _, media := range medias {
		evs := make([]watch.Event, benchPods)
		for i := range evs {
			evs[i] = watch.Event{Type: watch.Added, Object: podgen.Pod(i, 1000+i)}
		}
		body := encode(b, media, evs)
		b.Run(media+"/client-go", func(b *testing.B) {
			benchStream(b, body, func(r io.ReadCloser) watch.Interface { return clientGo(b, typedSerializer, media, r) })
		})
		for _, workers := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/workers=%d", media, workers), func(b *testing.B) {
				benchStream(b, body, func(r io.ReadCloser) watch.Interface {
					return New(r, typed, Options{Workers: workers})
				})
			})
		}
	}
}

func benchStream(b *testing.B, body []byte, open func(io.ReadCloser) watch.Interface) {
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		n := 0
		for range open(io.NopCloser(bytes.NewReader(body))).ResultChan() {
			n++
		}
		if n != benchPods {
			b.Fatalf("%d events", n)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's user and system time so far, in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
