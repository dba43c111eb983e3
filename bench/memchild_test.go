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
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
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
	Encoding string // one of memEncodings: "json", "protobuf" or "unstructured"
	Dir      string // where the page files are
	// Metadata: the metadata-only benchmark's process (memmeta_test.go).
	Metadata bool `json:",omitempty"`
	// SideBySide: the implementations of SideImpls in turn in this one
	// process, timed (memside_test.go); Impl is memSideImpl.
	SideBySide bool
	SideImpls  []string `json:",omitempty"`
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

// memImpls are the informers compared, by name, each built for objects
// of objType's type (a *corev1.Pod, or an *unstructured.Unstructured as a
// dynamic informer's).
var memImpls = map[string]func(lw clientgocache.ListerWatcher, objType apiruntime.Object) clientgocache.SharedIndexInformer{
	"client-go": func(lw clientgocache.ListerWatcher, objType apiruntime.Object) clientgocache.SharedIndexInformer {
		return clientgocache.NewSharedIndexInformer(lw, objType, 0, memIndexers())
	},
	"kreflector": func(lw clientgocache.ListerWatcher, objType apiruntime.Object) clientgocache.SharedIndexInformer {
		return memOurs(lw, objType, cache.ReflectorOptions{})
	},
	"kreflector+share": func(lw clientgocache.ListerWatcher, objType apiruntime.Object) clientgocache.SharedIndexInformer {
		return memOurs(lw, objType, cache.ReflectorOptions{ShareStrings: true})
	},
	"kreflector+lean": func(lw clientgocache.ListerWatcher, objType apiruntime.Object) clientgocache.SharedIndexInformer {
		return memOurs(lw, objType, cache.ReflectorOptions{ShareStrings: true, ShareMaps: true, DropManagedFields: true})
	},
	"kreflector+compact": func(lw clientgocache.ListerWatcher, objType apiruntime.Object) clientgocache.SharedIndexInformer {
		return memOurs(lw, objType, cache.ReflectorOptions{Compact: &cache.CompactOptions{}})
	},
	// Sharing has nothing to share in bytes; managedFields are left out
	// of every record.
	"kreflector+compact+lean": func(lw clientgocache.ListerWatcher, objType apiruntime.Object) clientgocache.SharedIndexInformer {
		return memOurs(lw, objType, cache.ReflectorOptions{Compact: &cache.CompactOptions{}, DropManagedFields: true})
	},
}

// memInformer is impl's constructor for the objects of encoding: typed
// Pods, or unstructured ones for "unstructured".
func memInformer(impl, encoding string) func(clientgocache.ListerWatcher) clientgocache.SharedIndexInformer {
	build, newObj := memImpls[impl], memCodecOf(encoding).newObj
	return func(lw clientgocache.ListerWatcher) clientgocache.SharedIndexInformer { return build(lw, newObj()) }
}

func memIndexers() clientgocache.Indexers {
	return clientgocache.Indexers{clientgocache.NamespaceIndex: clientgocache.MetaNamespaceIndexFunc}
}

func memOurs(lw clientgocache.ListerWatcher, objType apiruntime.Object, o cache.ReflectorOptions) clientgocache.SharedIndexInformer {
	inf := cache.NewSharedIndexInformer(lw, objType, 0, memIndexers())
	if err := inf.(cache.ReflectorConfigurable).SetReflectorOptions(o); err != nil {
		panic(err)
	}
	return inf
}

// memCodec is how the objects of one of memEncodings travel: enc encodes
// a Pod as the server sends it (a watch event's object), dec decodes
// what the server sent as the informer's client would, into a new
// newList (a LIST page) or newObj (a watch event's object, and the
// informer's object type). file is the encoding of the page files read.
type memCodec struct {
	file    string
	enc     apiruntime.Encoder
	dec     apiruntime.Decoder
	newList func() apiruntime.Object
	newObj  func() apiruntime.Object
}

// memCodecOf is encoding's codec: "json" and "protobuf" decode typed
// Pods as a clientset does (internal/podgen's codecs); "unstructured"
// decodes the JSON pages and events into unstructured objects, as
// client-go's dynamic client does (into an *unstructured.UnstructuredList
// for a LIST, whose items get the list's apiVersion and kind; a watch
// event's object carries its own, which its encoder writes as
// kube-apiserver does, and without which it would not decode).
func memCodecOf(encoding string) memCodec {
	if encoding == "unstructured" {
		enc, _ := podgen.Codec("json")
		enc = scheme.Codecs.EncoderForVersion(enc, corev1.SchemeGroupVersion)
		return memCodec{file: "json", enc: enc, dec: unstructured.UnstructuredJSONScheme,
			newList: func() apiruntime.Object { return &unstructured.UnstructuredList{} },
			newObj:  func() apiruntime.Object { return &unstructured.Unstructured{} },
		}
	}
	enc, dec := podgen.Codec(encoding)
	return memCodec{file: encoding, enc: enc, dec: dec,
		newList: func() apiruntime.Object { return &corev1.PodList{} },
		newObj:  func() apiruntime.Object { return &corev1.Pod{} },
	}
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
	if _, ok := memImpls[cfg.Impl]; !ok && !cfg.SideBySide {
		return nil, fmt.Errorf("membench: no implementation %q", cfg.Impl)
	}
	if memEncodingOf(cfg.Encoding) == nil {
		return nil, fmt.Errorf("membench: no encoding %q", cfg.Encoding)
	}
	codec := memCodecOf(cfg.Encoding)
	var versions [memVersions]*memPages
	for v := range versions {
		p, err := openMemPages(memPagesPath(cfg.Dir, cfg.N, v, codec.file))
		if err != nil {
			return nil, err
		}
		defer p.close()
		versions[v] = p
	}
	res := &memResult{memChildConfig: cfg}
	if cfg.SideBySide {
		return res, timeSideBySide(ctx, res, codec, versions[memInitial])
	}
	if err := measureDecode(res, codec, versions[memInitial]); err != nil {
		return nil, err
	}
	lw := newMemLW(codec, versions[memInitial])
	newInf := memInformer(cfg.Impl, cfg.Encoding)
	if err := timedSync(ctx, res, lw, newInf); err != nil {
		return res, err
	}
	return res, memoryPhases(ctx, res, lw, newInf, versions)
}

// measureDecode decodes up to 20 pages, nothing else running.
func measureDecode(res *memResult, codec memCodec, pages *memPages) error {
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
		obj, _, err := codec.dec.Decode(b, nil, codec.newList())
		if err != nil {
			return err
		}
		pods += apimeta.LenList(obj)
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

// The child's phases run, in process and at a small size, for the
// implementations of the encodings other than JSON: protobuf, and
// unstructured objects decoded from the JSON pages, whose informers hold
// *unstructured.Unstructured (relists are checked by their
// resourceVersions, as for typed Pods).
func TestMemChildEncodings(t *testing.T) {
	if testing.Short() {
		t.Skip("syncs informers of 507 Pods some 15 times")
	}
	dir := t.TempDir()
	const n = memPageSize + 7
	if err := writeAllMemPages(dir, []int{n}); err != nil {
		t.Fatal(err)
	}
	// Each child takes seconds (two relists, each after a Reflector's
	// backoff; a thousand watch events): two of them stand for the rest.
	for _, c := range []struct{ enc, impl string }{
		{"protobuf", "kreflector+compact+lean"},
		{"unstructured", "kreflector+compact"},
	} {
		res, err := runMemChild(t.Context(), memChildConfig{Impl: c.impl, N: n, Encoding: c.enc, Dir: dir})
		if err != nil {
			t.Fatalf("%s, %s: %v", c.enc, c.impl, err)
		}
		if res.DecodeNsPerPod <= 0 || res.SyncSeconds <= 0 || res.EventNs <= 0 || res.DecodedEventNs <= 0 || res.SyncedHeap == 0 {
			t.Errorf("%s, %s: a phase measured nothing: %+v", c.enc, c.impl, res)
		}
	}
	codec := memCodecOf("unstructured")
	pages, err := openMemPages(memPagesPath(dir, n, memInitial, codec.file))
	if err != nil {
		t.Fatal(err)
	}
	defer pages.close()
	for _, impl := range memEncodingOf("unstructured").impls {
		r, err := startMemRun(t.Context(), newMemLW(codec, pages), memInformer(impl, "unstructured"))
		if err != nil {
			t.Fatal(err)
		}
		p := memPod(memInitial, n, n-1)
		err = r.waitSynced(n)
		var obj any
		if err == nil {
			obj, _, err = r.inf.GetStore().GetByKey(p.Namespace + "/" + p.Name)
		}
		r.stop()
		if err != nil {
			t.Fatalf("unstructured, %s: %v", impl, err)
		}
		wantManaged := len(p.ManagedFields)
		if strings.HasSuffix(impl, "+lean") { // DropManagedFields
			wantManaged = 0
		}
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			t.Errorf("unstructured, %s: the last Pod is held as a %T", impl, obj)
			continue
		}
		if u.GetAPIVersion() != "v1" || u.GetKind() != "Pod" || u.GetUID() != p.UID || len(u.GetManagedFields()) != wantManaged {
			t.Errorf("unstructured, %s: the last Pod is held as %v", impl, u.Object)
		}
		if c, _, _ := unstructured.NestedSlice(u.Object, "spec", "containers"); len(c) != len(p.Spec.Containers) {
			t.Errorf("unstructured, %s: %d containers, want %d", impl, len(c), len(p.Spec.Containers))
		}
	}
}
