package bench

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/internal/podgen"
)

// BenchmarkCompactReads reads a store of realistic Pods, decoded from
// protobuf as a clientset decodes them, from client-go's indexer and from
// a compact one (its default read cache: a thirty-second of the records' bytes,
// at least 4 MiB), side by side:
//
//	go test -run '^$' -bench BenchmarkCompactReads -benchtime 1x ./bench/
//
// Each read is timed alone; p50 and p99 are reported. "hot" reads one
// key again and again, "cold" keys at random over the store (a compact
// store then mostly decodes), "byindex" lists a namespace of 1,000 Pods.
// KREFLECTOR_COMPACTREADS_PODS sets the store's size (default 100,000).
func BenchmarkCompactReads(b *testing.B) {
	n := 100000
	if v := cmpEnv("KREFLECTOR_COMPACTREADS_PODS", ""); v != "" {
		if _, err := fmt.Sscan(v, &n); err != nil {
			b.Fatal(err)
		}
	}
	pods := decodedPods(b, n)
	stores := map[string]clientgocache.Indexer{
		"client-go": clientgocache.NewIndexer(clientgocache.MetaNamespaceKeyFunc, compactBenchIndexers()),
		"compact":   cache.NewCompactIndexer(cache.MetaNamespaceKeyFunc, compactBenchIndexers(), cache.CompactOptions{}),
	}
	for _, impl := range []string{"client-go", "compact"} {
		s := stores[impl]
		for _, p := range pods {
			if err := s.Add(p); err != nil {
				b.Fatal(err)
			}
		}
		keys := s.ListKeys()
		slices.Sort(keys)
		rng := rand.New(rand.NewPCG(1, 2))
		b.Run(impl+"/hot", func(b *testing.B) { timeReads(b, 100000, func() { s.GetByKey(keys[0]) }) })
		b.Run(impl+"/cold", func(b *testing.B) { timeReads(b, 100000, func() { s.GetByKey(keys[rng.IntN(len(keys))]) }) })
		b.Run(impl+"/byindex", func(b *testing.B) {
			timeReads(b, 200, func() {
				if objs, _ := s.ByIndex("group", fmt.Sprint(rng.IntN(n/1000))); len(objs) != 1000 {
					b.Fatalf("%d objects", len(objs))
				}
			})
		})
	}
}

// compactBenchIndexers are client-go's namespace index and "group": Pod i
// is in group i/1000.
func compactBenchIndexers() clientgocache.Indexers {
	return clientgocache.Indexers{
		clientgocache.NamespaceIndex: clientgocache.MetaNamespaceIndexFunc,
		"group":                      func(obj any) ([]string, error) { return []string{obj.(*corev1.Pod).Labels["group"]}, nil },
	}
}

// decodedPods are n realistic Pods, labelled with their group, each
// decoded from its protobuf encoding.
func decodedPods(b *testing.B, n int) []*corev1.Pod {
	enc, dec := podgen.Codec("protobuf")
	out := make([]*corev1.Pod, n)
	for i := range n {
		p := podgen.Pod(i, i+1)
		p.Labels["group"] = fmt.Sprint(i / 1000)
		p.APIVersion, p.Kind = "v1", "Pod"
		raw, err := apiruntime.Encode(enc, p)
		if err != nil {
			b.Fatal(err)
		}
		obj, err := apiruntime.Decode(dec, raw)
		if err != nil {
			b.Fatal(err)
		}
		out[i] = obj.(*corev1.Pod)
	}
	return out
}

// timeReads times reads calls of read, each alone, and reports p50 and
// p99 in microseconds.
func timeReads(b *testing.B, reads int, read func()) {
	took := make([]time.Duration, reads)
	for b.Loop() {
		for i := range took {
			start := time.Now()
			read()
			took[i] = time.Since(start)
		}
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[reads/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(took[reads*99/100].Nanoseconds())/1e3, "p99-µs")
	b.ReportMetric(0, "ns/op")
}
