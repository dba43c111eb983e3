//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kreflector/cache"
)

// figuresWorkerEnv, when set to "NAMESPACE,I,N", makes
// TestShardFigureWorker measure replica I of N over the ConfigMaps in
// NAMESPACE (N = 1: unsharded) and print its figures; TestShardFigures
// sets it for each replica it runs, each in a process of its own.
const figuresWorkerEnv = "KREFLECTOR_SHARD_FIGURES_WORKER"

// figuresLine starts the line a worker prints its figures on.
const figuresLine = "shard-figures: "

// replicaFigures are what one replica received, decoded and holds once
// synced.
type replicaFigures struct {
	I, N int
	// Bytes is the response bytes read (bodies, after any decompression
	// by the transport; HTTP/2 framing and TLS not counted).
	Bytes int64
	// Decoded counts LIST items and watch events other than bookmarks.
	Decoded uint64
	// ItemsListed is the Reflector's own count (Stats.ItemsListed).
	ItemsListed uint64
	// Heap is the live heap (HeapAlloc after two GCs) with the Reflector
	// synced and running, minus that before it was built.
	Heap int64
	// Sync is the time from Run to WaitForSync's return.
	Sync time.Duration
}

// TestShardFigureWorker is run by TestShardFigures, in a process of its
// own per replica; it is skipped otherwise.
func TestShardFigureWorker(t *testing.T) {
	spec := os.Getenv(figuresWorkerEnv)
	if spec == "" {
		t.Skip("run by TestShardFigures")
	}
	parts := strings.Split(spec, ",")
	if len(parts) != 3 {
		t.Fatalf("%s=%q: want NAMESPACE,I,N", figuresWorkerEnv, spec)
	}
	ns := parts[0]
	i, err1 := strconv.Atoi(parts[1])
	n, err2 := strconv.Atoi(parts[2])
	if err1 != nil || err2 != nil {
		t.Fatalf("%s=%q: want NAMESPACE,I,N", figuresWorkerEnv, spec)
	}
	var counter byteCounter
	cs, err := kubernetes.NewForConfig(counter.config(testCluster.admin))
	if err != nil {
		t.Fatal(err)
	}
	lw := observe(configMapsLW(cs, ns))
	opts := cache.ReflectorOptions{Name: fmt.Sprintf("replica-%d-of-%d", i, n)}
	if n > 1 {
		s := mustReplicaShard(t, i, n)
		opts.Shard = &s
	}
	base := liveHeap()
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	r := cache.NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, opts)
	start := time.Now()
	runReflector(t, r)
	mustSync(t, r)
	f := replicaFigures{I: i, N: n, Sync: time.Since(start)}
	f.Heap = liveHeap() - base
	f.Bytes, f.Decoded, f.ItemsListed = counter.n.Load(), lw.decoded.Load(), r.Stats().ItemsListed
	runtime.KeepAlive(store)
	out, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(figuresLine + string(out))
}

// liveHeap is HeapAlloc after two collections.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// runFigureWorker runs replica i of n in a new process of this test binary
// and returns its figures.
func runFigureWorker(t *testing.T, ns string, i, n int) replicaFigures {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestShardFigureWorker$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%d,%d", figuresWorkerEnv, ns, i, n))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("replica %d of %d: %v\n%s", i, n, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, figuresLine); ok {
			var f replicaFigures
			if err := json.Unmarshal([]byte(rest), &f); err != nil {
				t.Fatalf("replica %d of %d: %q: %v", i, n, rest, err)
			}
			return f
		}
	}
	t.Fatalf("replica %d of %d printed no figures:\n%s", i, n, out)
	return replicaFigures{}
}

// TestShardFigures measures, per replica, what our Reflector receives,
// decodes and holds when the bulk namespace's 3,000 ConfigMaps are split
// in 1 (unsharded), 2 and 4 shards on the real kube-apiserver, each
// replica in a process of its own (default options: a WatchList sync),
// and prints the figures (go test -v). Each replica decodes exactly the
// objects of its server-side shard and together they decode every object
// once; each one's bytes are its share of the unsharded replica's to
// within 5 points, and with 4 shards each holds at most half the heap of
// the unsharded one.
func TestShardFigures(t *testing.T) {
	t.Parallel()
	cs := client(t, testCluster.admin)
	ns := bulkNamespace(t, cs)
	all, _ := shardedConfigMapList(t, cs, ns, cache.Shard{})
	var whole replicaFigures
	for _, n := range []int{1, 2, 4} {
		var decoded uint64
		for i := range n {
			f := runFigureWorker(t, ns, i, n)
			want := len(all)
			if n > 1 {
				in, _ := shardedConfigMapList(t, cs, ns, mustReplicaShard(t, i, n))
				want = len(in)
			}
			if n == 1 {
				whole = f
			}
			byteShare, objShare := float64(f.Bytes)/float64(whole.Bytes), float64(f.Decoded)/float64(whole.Decoded)
			heapShare := float64(f.Heap) / float64(whole.Heap)
			t.Logf("replica %d of %d: %6d objects decoded (%.3f of unsharded), %9d bytes received (%.3f), %6.2f MiB heap held (%.3f), synced in %v",
				i, n, f.Decoded, objShare, f.Bytes, byteShare, float64(f.Heap)/(1<<20), heapShare, f.Sync.Round(time.Millisecond))
			if f.Decoded != uint64(want) || f.ItemsListed != uint64(want) {
				t.Errorf("replica %d of %d decoded %d objects (items listed %d); its server-side shard holds %d", i, n, f.Decoded, f.ItemsListed, want)
			}
			if byteShare < objShare-0.05 || byteShare > objShare+0.05 {
				t.Errorf("replica %d of %d received %.3f of the unsharded replica's bytes for %.3f of its objects", i, n, byteShare, objShare)
			}
			if n == 4 && heapShare > 0.5 {
				t.Errorf("replica %d of 4 holds %.3f of the unsharded replica's heap, want at most 0.5", i, heapShare)
			}
			decoded += f.Decoded
		}
		if decoded != uint64(len(all)) {
			t.Errorf("%d replicas decoded %d objects together; the namespace holds %d", n, decoded, len(all))
		}
	}
}
