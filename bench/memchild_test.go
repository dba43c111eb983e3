package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/internal/podgen"
)

// One process of the memory benchmark (membench_test.go): one
// implementation, one collection size, one encoding. It runs only when
// BenchmarkMemorySideBySide starts it, with memChildEnv set, and prints
// its figures as one line prefixed by memResultPrefix.

const (
	memChildEnv     = "KREFLECTOR_MEMCHILD"
	memResultPrefix = "MEMRESULT "
	// memGCPercent is the GOGC of the phases whose peak is measured: a
	// collection every 10% of growth, so that the live heap, which the
	// runtime knows only as of the last collection, is sampled finely.
	memGCPercent = 10
)

// memChildConfig is what the parent asks of a child.
type memChildConfig struct {
	Impl     string // one of memImpls
	N        int    // Pods
	Encoding string // "json" or "protobuf"
	Dir      string // where the page files are
	// TimeOnly: only the decoding and sync-time phases (the protobuf
	// runs, which answer how much the encoding changes the sync time).
	TimeOnly bool
	// Metadata: the metadata-only benchmark's process (memmeta_test.go).
	Metadata bool `json:",omitempty"`
	// SideBySide: every implementation in turn in this one process,
	// timed (memside_test.go); Impl is memSideImpl.
	SideBySide bool
}

// memSideImpl names the side-by-side process among the implementations.
const memSideImpl = "side-by-side"

// memResult is what a child measured. Heap figures are bytes; "live" is
// the runtime's live heap as marked by the latest collection.
type memResult struct {
	memChildConfig
	DecodeNsPerPod  float64 // decoding pages alone, no informer
	DecodeBPerPod   float64
	SyncSeconds     float64 // at GOGC 100: Run until the handler saw N adds and HasSynced
	HeapPerObject   float64 // (synced live heap - live heap before) / N
	SyncedHeap      uint64  // live heap after the sync, informer included, minus the one before
	SyncPeak        uint64  // peak live heap during the initial sync (GOGC 10), minus the one before
	FewChangedPeak  uint64  // the same during the relist after a 410 with 5% of the Pods changed
	AllChangedPeak  uint64  // ... with every Pod changed
	FewChangedAfter uint64  // live heap once that relist is done
	AllChangedAfter uint64
	EventNs         float64 // per MODIFIED watch event, decoded beforehand, to the handler
	EventCPUNs      float64 // the process's CPU time per such event
	EventAllocs     float64
	EventBytes      float64
	// DecodedEventNs and DecodedEventCPUNs are per event sent as bytes and
	// decoded on the sending goroutine, as a client's watch decodes.
	DecodedEventNs    float64
	DecodedEventCPUNs float64
	// Side holds the side-by-side process's figures, by implementation.
	Side map[string]*memSideTimes `json:",omitempty"`
}

// memImpls are the informers compared, by name.
var memImpls = map[string]func(lw clientgocache.ListerWatcher) clientgocache.SharedIndexInformer{
	"client-go": func(lw clientgocache.ListerWatcher) clientgocache.SharedIndexInformer {
		return clientgocache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, memIndexers())
	},
	"kreflector": func(lw clientgocache.ListerWatcher) clientgocache.SharedIndexInformer {
		return memOurs(lw, cache.ReflectorOptions{})
	},
	"kreflector+share": func(lw clientgocache.ListerWatcher) clientgocache.SharedIndexInformer {
		return memOurs(lw, cache.ReflectorOptions{ShareStrings: true})
	},
	"kreflector+lean": func(lw clientgocache.ListerWatcher) clientgocache.SharedIndexInformer {
		return memOurs(lw, cache.ReflectorOptions{ShareStrings: true, ShareMaps: true, DropManagedFields: true})
	},
	"kreflector+compact": func(lw clientgocache.ListerWatcher) clientgocache.SharedIndexInformer {
		return memOurs(lw, cache.ReflectorOptions{Compact: &cache.CompactOptions{}})
	},
	// Sharing has nothing to share in bytes; managedFields are left out
	// of every record.
	"kreflector+compact+lean": func(lw clientgocache.ListerWatcher) clientgocache.SharedIndexInformer {
		return memOurs(lw, cache.ReflectorOptions{Compact: &cache.CompactOptions{}, DropManagedFields: true})
	},
}

func memIndexers() clientgocache.Indexers {
	return clientgocache.Indexers{clientgocache.NamespaceIndex: clientgocache.MetaNamespaceIndexFunc}
}

func memOurs(lw clientgocache.ListerWatcher, o cache.ReflectorOptions) clientgocache.SharedIndexInformer {
	inf := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, memIndexers())
	if err := inf.(cache.ReflectorConfigurable).SetReflectorOptions(o); err != nil {
		panic(err)
	}
	return inf
}

// TestMemChild is one process of BenchmarkMemorySideBySide; it skips
// unless that benchmark started it.
func TestMemChild(t *testing.T) {
	spec := os.Getenv(memChildEnv)
	if spec == "" {
		t.Skip("a process of BenchmarkMemorySideBySide; runs only when it starts one")
	}
	var cfg memChildConfig
	if err := json.Unmarshal([]byte(spec), &cfg); err != nil {
		t.Fatal(err)
	}
	res, err := runMemChild(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(res)
	fmt.Println(memResultPrefix + string(out))
}

// runMemChild runs the phases, in this order: decoding alone, a timed
// sync at the default GOGC, then at GOGC 10 a sync, a relist after a 410
// with 5% changed, one with all changed (peaks sampled), and last, at the
// default GOGC again, watch events.
func runMemChild(ctx context.Context, cfg memChildConfig) (*memResult, error) {
	if cfg.Metadata {
		return runMetaChild(ctx, cfg)
	}
	newInf, ok := memImpls[cfg.Impl]
	if !ok && !cfg.SideBySide {
		return nil, fmt.Errorf("membench: no implementation %q", cfg.Impl)
	}
	_, dec := podgen.Codec(cfg.Encoding)
	var versions [memVersions]*memPages
	for v := range versions {
		p, err := openMemPages(memPagesPath(cfg.Dir, cfg.N, v, cfg.Encoding))
		if err != nil {
			return nil, err
		}
		defer p.close()
		versions[v] = p
	}
	res := &memResult{memChildConfig: cfg}
	if cfg.SideBySide {
		return res, timeSideBySide(ctx, res, dec, versions[memInitial])
	}
	if err := measureDecode(res, dec, versions[memInitial]); err != nil {
		return nil, err
	}
	lw := newMemLW(dec, versions[memInitial])
	if err := timedSync(ctx, res, lw, newInf); err != nil || cfg.TimeOnly {
		return res, err
	}
	return res, memoryPhases(ctx, res, lw, newInf, versions)
}

// measureDecode decodes up to 20 pages, nothing else running.
func measureDecode(res *memResult, dec apiruntime.Decoder, pages *memPages) error {
	n := min(20, len(pages.offs))
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	pods := 0
	for k := range n {
		b, err := pages.read(k)
		if err != nil {
			return err
		}
		obj, _, err := dec.Decode(b, nil, &corev1.PodList{})
		if err != nil {
			return err
		}
		pods += len(obj.(*corev1.PodList).Items)
	}
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	res.DecodeNsPerPod = float64(elapsed.Nanoseconds()) / float64(pods)
	res.DecodeBPerPod = float64(after.TotalAlloc-before.TotalAlloc) / float64(pods)
	return nil
}

// memRun is an informer running with one counting handler.
type memRun struct {
	inf    clientgocache.SharedIndexInformer
	h      *memHandler
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func startMemRun(ctx context.Context, lw *memLW, newInf func(clientgocache.ListerWatcher) clientgocache.SharedIndexInformer) (*memRun, error) {
	r := &memRun{inf: newInf(lw), h: &memHandler{}}
	if _, err := r.inf.AddEventHandler(r.h); err != nil {
		return nil, err
	}
	ctx, r.cancel = context.WithCancel(ctx)
	r.wg.Go(func() { r.inf.Run(ctx.Done()) })
	return r, nil
}

// stop stops the informer and waits for Run to return.
func (r *memRun) stop() {
	r.cancel()
	r.wg.Wait()
}

// waitSynced waits until the handler has had total calls and the informer
// HasSynced.
func (r *memRun) waitSynced(total int64) error {
	if err := r.h.wait(total); err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for !r.inf.HasSynced() {
		if time.Now().After(deadline) {
			return fmt.Errorf("membench: the handler saw %d calls but the informer has not synced", total)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// timedSync times one sync at the default GOGC, in a process that has not
// synced before, as a program starting up would.
func timedSync(ctx context.Context, res *memResult, lw *memLW, newInf func(clientgocache.ListerWatcher) clientgocache.SharedIndexInformer) error {
	runtime.GC()
	start := time.Now()
	r, err := startMemRun(ctx, lw, newInf)
	if err != nil {
		return err
	}
	err = r.waitSynced(int64(res.N))
	res.SyncSeconds = time.Since(start).Seconds()
	r.stop()
	drainOpened(lw)
	return err
}

// drainOpened forgets the watches served so far.
func drainOpened(lw *memLW) {
	for {
		select {
		case <-lw.opened:
		default:
			return
		}
	}
}

// memHandler counts the calls it gets, all kinds together, and lets one
// waiter wait for a total.
type memHandler struct {
	mu     sync.Mutex
	seen   int64
	target int64
	hit    chan struct{}
}

func (h *memHandler) OnAdd(any, bool)   { h.count() }
func (h *memHandler) OnUpdate(any, any) { h.count() }
func (h *memHandler) OnDelete(any)      { h.count() }

func (h *memHandler) calls() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seen
}

func (h *memHandler) count() {
	h.mu.Lock()
	h.seen++
	if h.hit != nil && h.seen == h.target {
		close(h.hit)
	}
	h.mu.Unlock()
}

// wait waits until the handler has had total calls, for up to 10 minutes.
func (h *memHandler) wait(total int64) error {
	h.mu.Lock()
	if h.seen >= total {
		h.mu.Unlock()
		return nil
	}
	h.target, h.hit = total, make(chan struct{})
	hit := h.hit
	h.mu.Unlock()
	select {
	case <-hit:
		return nil
	case <-time.After(10 * time.Minute):
		return fmt.Errorf("membench: the handler saw %d calls of %d in 10 minutes", h.calls(), total)
	}
}

// liveHeapNow collects twice (the second pass finishes sweeping what the
// first freed) and returns the live heap.
func liveHeapNow() uint64 {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// memGOGC sets GOGC for what follows.
func memGOGC(percent int) { debug.SetGCPercent(percent) }

// parseMemSizes parses a comma-separated list of collection sizes.
func parseMemSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("membench: bad size %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}
