package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"testing"
	"time"

	clientgoinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientgocache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/informers"
)

// One process of the cold-start benchmark (coldstart_test.go): one
// implementation's Pod informer, from its factory, over a real clientset
// talking HTTP to the benchmark's server, in one encoding and mode at one
// GOMAXPROCS (set in its environment). It syncs twice: timed at GOGC 100,
// then at GOGC 10 with the live heap's peak sampled (unless asked not to). It runs only when
// BenchmarkColdStart starts it, with coldChildEnv set, and prints its
// figures as one line prefixed by coldResultPrefix.

const (
	coldChildEnv     = "KREFLECTOR_COLDCHILD"
	coldResultPrefix = "COLDRESULT "
)

// coldCell is one column of the benchmark's matrix.
type coldCell struct {
	Encoding string // "json" or "protobuf"
	Mode     string // "paged", "whole" or "watchlist"
	Procs    int    // GOMAXPROCS
	Impl     string // "client-go", "kreflector", "kreflector+lean" or "kreflector+compact"
	// Gzip: the server compresses as kube-apiserver does.
	Gzip bool `json:",omitempty"`
}

func (c coldCell) String() string {
	mode := c.Mode
	if c.Gzip {
		mode += "+gzip"
	}
	return fmt.Sprintf("%s/%s/GOMAXPROCS=%d/%s", c.Encoding, mode, c.Procs, c.Impl)
}

// coldChildConfig is what the parent asks of a child.
type coldChildConfig struct {
	coldCell
	N   int    // Pods served
	URL string // the server
	// NoHeap: only the timed sync (KREFLECTOR_COLDSTART_HEAP=0).
	NoHeap bool `json:",omitempty"`
	// CPUProfile, if set, is the file the timed sync's CPU profile goes
	// to (KREFLECTOR_COLDSTART_CPUPROFILE).
	CPUProfile string `json:",omitempty"`
}

// coldResult is what a child measured.
type coldResult struct {
	coldChildConfig
	SyncSeconds float64 // factory Start until WaitForCacheSync and N adds, GOGC 100
	SyncCPU     float64 // the process's CPU seconds meanwhile (every goroutine, the GC's too)
	Elsewhere   float64 // cores other processes took meanwhile (the server's included)
	Sync2       float64 // the second sync's wall seconds (GOGC 10, the heap sampled)
	Peak        uint64  // peak live heap during the second sync (GOGC 10), minus the one before; at least Held
	Held        uint64  // live heap once it synced (informer running), minus the one before
	Objects     int     // in the informer's store after the first sync
	Objects2    int     // ... after the second
	Cost        coldStats
	Cost2       coldStats // the second sync's
	// WatchWait is how long after the sync the first sync's watch was
	// seen opened, in the LIST modes (-1: not within 10 s; 0 for
	// WatchList, whose stream is the watch).
	WatchWait float64
}

// TestColdChild is one process of BenchmarkColdStart; it skips unless
// that benchmark started it.
func TestColdChild(t *testing.T) {
	spec := os.Getenv(coldChildEnv)
	if spec == "" {
		t.Skip("a process of BenchmarkColdStart; runs only when it starts one")
	}
	var cfg coldChildConfig
	if err := json.Unmarshal([]byte(spec), &cfg); err != nil {
		t.Fatal(err)
	}
	if got := runtime.GOMAXPROCS(0); got != cfg.Procs {
		t.Fatalf("GOMAXPROCS is %d, want %d", got, cfg.Procs)
	}
	res, err := runColdChild(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(res)
	fmt.Println(coldResultPrefix + string(out))
}

// runColdChild runs the timed sync, then, unless cfg.NoHeap, the one
// whose heap is sampled.
func runColdChild(cfg coldChildConfig) (*coldResult, error) {
	cs, err := coldClientset(cfg.URL, cfg.Encoding)
	if err != nil {
		return nil, err
	}
	res := &coldResult{coldChildConfig: cfg}
	memGOGC(100)
	runtime.GC()
	stopProfile, err := startColdProfile(cfg.CPUProfile)
	if err != nil {
		return nil, err
	}
	s, err := startColdSync(cfg, cs)
	if err != nil {
		stopProfile()
		return nil, err
	}
	t, objects, err := s.wait(cfg.N)
	stopProfile()
	res.SyncSeconds, res.SyncCPU, res.Elsewhere = t.wall.Seconds(), t.cpu.Seconds(), t.elsewhere
	res.Objects = objects
	if err == nil {
		res.Cost, res.WatchWait, err = s.settle()
	}
	s.stop()
	if err != nil || cfg.NoHeap {
		return res, err
	}
	return res, coldHeapSync(cfg, cs, res)
}

// startColdProfile starts a CPU profile to file, if file is set, and
// with KREFLECTOR_COLDSTART_TRACE=1 an execution trace to file.trace too;
// it returns what ends them.
func startColdProfile(file string) (stop func(), err error) {
	if file == "" {
		return func() {}, nil
	}
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	stopTrace := func() {}
	if os.Getenv("KREFLECTOR_COLDSTART_TRACE") == "1" {
		tf, err := os.Create(file + ".trace")
		if err == nil && trace.Start(tf) == nil {
			stopTrace = func() { trace.Stop(); tf.Close() }
		}
	}
	return func() { stopTrace(); pprof.StopCPUProfile(); f.Close() }, nil
}

// coldHeapSync syncs at GOGC 10, sampling the live heap. The peak is
// at least the heap once synced: the runtime knows the live heap as of
// the latest collection, which may come up to 10% of growth before the
// sync's end.
func coldHeapSync(cfg coldChildConfig, cs kubernetes.Interface, res *coldResult) error {
	memGOGC(memGCPercent)
	defer memGOGC(100)
	base := liveHeapNow()
	peak := startPeak()
	s, err := startColdSync(cfg, cs)
	if err != nil {
		return err
	}
	defer s.stop()
	t, objects, err := s.wait(cfg.N)
	res.Sync2, res.Objects2 = t.wall.Seconds(), objects
	res.Peak = peak.finish(base)
	held := liveHeapNow()
	res.Held = held - min(held, base)
	res.Peak = max(res.Peak, res.Held)
	if err == nil {
		res.Cost2, _, err = s.settle()
	}
	return err
}

// coldClientset is a clientset for the server at url that asks for
// encoding, with no client-side rate limit (QPS -1): at client-go's
// default of 5 a second, the 200 pages of 100,000 Pods would take 40 s.
func coldClientset(url, encoding string) (*kubernetes.Clientset, error) {
	cfg := &rest.Config{Host: url, QPS: -1}
	if encoding == "protobuf" {
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	} else {
		cfg.ContentType = "application/json"
		cfg.AcceptContentTypes = "application/json"
	}
	return kubernetes.NewForConfig(cfg)
}

// coldSync is one informer syncing, from its factory, with one counting
// handler.
type coldSync struct {
	cfg     coldChildConfig
	factory clientgoinformers.SharedInformerFactory
	inf     clientgocache.SharedIndexInformer
	h       *memHandler
	stopCh  chan struct{}
	start   time.Time
	cpu0    time.Duration // the process's CPU time at Start
	busy0   time.Duration // the machine's busy time at Start
	before  coldStats     // the server's stats before Start
}

// startColdSync builds cfg.Impl's factory and Pod informer, adds the
// handler and starts the factory.
func startColdSync(cfg coldChildConfig, cs kubernetes.Interface) (*coldSync, error) {
	before, err := fetchColdStats(cfg.URL)
	if err != nil {
		return nil, err
	}
	s := &coldSync{cfg: cfg, h: &memHandler{}, stopCh: make(chan struct{}), before: before}
	if cfg.Impl == "client-go" {
		s.factory = clientgoinformers.NewSharedInformerFactory(cs, 0)
		s.inf = s.factory.Core().V1().Pods().Informer()
	} else {
		s.factory = informers.NewSharedInformerFactory(cs, 0)
		s.inf = s.factory.Core().V1().Pods().Informer()
		if err := configureOurs(s.inf, cfg); err != nil {
			return nil, err
		}
	}
	if _, err := s.inf.AddEventHandler(s.h); err != nil {
		return nil, err
	}
	s.busy0, _ = machineBusy()
	s.start, s.cpu0 = time.Now(), processCPU()
	s.factory.Start(s.stopCh)
	return s, nil
}

// configureOurs sets the lean or compact options, and turns WatchList off in the
// LIST modes: both informers read client-go's WatchListClient feature
// gate (KUBE_FEATURE_WatchListClient=false, set by the parent); ours is
// told so explicitly too, so the cell does not rest on the gate alone.
func configureOurs(inf clientgocache.SharedIndexInformer, cfg coldChildConfig) error {
	var o cache.ReflectorOptions
	set := false
	switch cfg.Impl {
	case "kreflector+lean":
		o.ShareStrings, o.ShareMaps, o.DropManagedFields = true, true, true
		set = true
	case "kreflector+compact":
		o.Compact = &cache.CompactOptions{}
		set = true
	}
	if cfg.Mode != "watchlist" {
		o.UseWatchList = ptr.To(false)
		set = true
	}
	if !set {
		return nil
	}
	rc, ok := inf.(cache.ReflectorConfigurable)
	if !ok {
		return fmt.Errorf("coldstart: the factory's informer %T takes no ReflectorOptions", inf)
	}
	return rc.SetReflectorOptions(o)
}

// coldTimes are a sync's times.
type coldTimes struct {
	wall, cpu time.Duration
	elsewhere float64
}

// wait waits until the factory's WaitForCacheSync has returned and the
// handler has had n adds; it returns the times since Start and the
// objects in the store.
func (s *coldSync) wait(n int) (coldTimes, int, error) {
	for typ, ok := range s.factory.WaitForCacheSync(s.stopCh) {
		if !ok {
			return coldTimes{}, 0, fmt.Errorf("coldstart: %v did not sync", typ)
		}
	}
	if err := s.h.wait(int64(n)); err != nil {
		return coldTimes{}, 0, err
	}
	t := coldTimes{wall: time.Since(s.start), cpu: processCPU() - s.cpu0}
	if busy, ok := machineBusy(); ok {
		t.elsewhere = loadElsewhere(busy-s.busy0, t.cpu, t.wall)
	}
	return t, len(s.inf.GetStore().ListKeys()), nil
}

// settle waits, in the LIST modes, until the server has seen the watch
// that follows the LIST (so that every sync is counted alike), and
// returns what the sync cost the server and how long the watch took.
func (s *coldSync) settle() (coldStats, float64, error) {
	start := time.Now()
	waited := 0.0
	if s.cfg.Mode != "watchlist" {
		waited = -1
	}
	for waited < 0 && time.Since(start) < 10*time.Second {
		st, err := fetchColdStats(s.cfg.URL)
		if err != nil {
			return coldStats{}, 0, err
		}
		if st.Watches > s.before.Watches {
			waited = time.Since(start).Seconds()
			break
		}
		time.Sleep(time.Millisecond)
	}
	st, err := fetchColdStats(s.cfg.URL)
	return st.minus(s.before), waited, err
}

// stop stops the informer and waits for the factory's goroutines.
func (s *coldSync) stop() {
	close(s.stopCh)
	s.factory.Shutdown()
}
