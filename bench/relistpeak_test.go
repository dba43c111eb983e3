package bench

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	clientgocache "k8s.io/client-go/tools/cache"
)

// BenchmarkRelistPeakOverHTTP measures the peak live heap of a Pod
// informer's relists as a program meets them: the informer from its
// factory, over a real clientset talking protobuf over HTTP to a server in
// its process (relistpeak_server_test.go) that streams the memory
// benchmark's page files (the same realistic Pods, pages of 500). Each run
// is a process of its own per implementation, at GOGC 10 as the memory
// benchmark's peaks are: the informer syncs KREFLECTOR_RELISTPEAK_PODS Pods
// (default 100000; KREFLECTOR_RELISTPEAK_IMPLS, a comma-separated list,
// picks from client-go, kreflector, kreflector+compact), its watch is ended and answered 410 Expired, and it
// relists with every twentieth Pod changed, then again with every Pod
// changed. With KREFLECTOR_RELISTPEAK_WATCHLIST=1 the server streams
// WatchLists and the informers ask for them: the sync and the relists are
// each a WatchList's initial events. Reported, each the median of b.N
// processes: the synced heap,
// the initial sync's peak and each relist's peak as multiples of it, and
// how many listed Pods a relist left undecoded (Stats.ItemsNotDecoded;
// ours only). The memory benchmark's relist rows decode the pages on its
// own ListerWatcher, for every implementation alike; here each decodes
// them as it would from a cluster.
//
//	KREFLECTOR_RELISTPEAK_PODS=100000 go test -run '^$' -bench BenchmarkRelistPeakOverHTTP -benchtime 3x -timeout 2h ./bench/
func BenchmarkRelistPeakOverHTTP(b *testing.B) {
	n, err := strconv.Atoi(cmpEnv("KREFLECTOR_RELISTPEAK_PODS", "100000"))
	if err != nil || n < 1 {
		b.Fatalf("bad KREFLECTOR_RELISTPEAK_PODS (%v)", err)
	}
	dir, err := memPagesDir()
	if err == nil {
		err = writeRelistPeakPages(dir, n)
	}
	if err != nil {
		b.Fatal(err)
	}
	for _, impl := range strings.Split(cmpEnv("KREFLECTOR_RELISTPEAK_IMPLS", "client-go,kreflector,kreflector+compact"), ",") {
		b.Run(impl, func(b *testing.B) {
			var runs []relistPeakResult
			for range b.N {
				cfg := relistPeakConfig{Impl: impl, N: n, Dir: dir, WatchList: cmpEnv("KREFLECTOR_RELISTPEAK_WATCHLIST", "") == "1"}
				spec, _ := json.Marshal(cfg)
				r, err := runChildProcess[relistPeakResult]("relistpeak", "TestRelistPeakChild",
					relistPeakPrefix, spec, relistPeakEnv+"="+string(spec))
				if err != nil {
					b.Fatal(err)
				}
				runs = append(runs, *r)
			}
			reportRelistPeak(b, runs)
		})
	}
}

// reportRelistPeak reports the medians of runs.
func reportRelistPeak(b *testing.B, runs []relistPeakResult) {
	ratio := func(peak func(relistPeakResult) uint64) func(relistPeakResult) float64 {
		return func(r relistPeakResult) float64 { return float64(peak(r)) / float64(r.SyncedHeap) }
	}
	b.ReportMetric(medianOf(runs, func(r relistPeakResult) float64 { return float64(r.SyncedHeap) / (1 << 20) }), "synced-MiB")
	b.ReportMetric(medianOf(runs, ratio(func(r relistPeakResult) uint64 { return r.SyncPeak })), "sync-peak-x")
	b.ReportMetric(medianOf(runs, ratio(func(r relistPeakResult) uint64 { return r.FewChangedPeak })), "relist-5%-peak-x")
	b.ReportMetric(medianOf(runs, ratio(func(r relistPeakResult) uint64 { return r.AllChangedPeak })), "relist-all-peak-x")
	b.ReportMetric(medianOf(runs, func(r relistPeakResult) float64 { return float64(r.FewChangedNotDecoded) }), "5%-not-decoded")
}

// writeRelistPeakPages writes the protobuf page files of n Pods, every
// version, under dir unless they are there.
func writeRelistPeakPages(dir string, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for v := range memVersions {
		if err := writeMemPages(memPagesPath(dir, n, v, "protobuf"), n, v, "protobuf"); err != nil {
			return err
		}
	}
	return nil
}

// relistPeakEnv carries a child's relistPeakConfig, as JSON; the child
// prints its relistPeakResult after relistPeakPrefix.
const (
	relistPeakEnv    = "KREFLECTOR_RELISTPEAK_CHILD"
	relistPeakPrefix = "relistpeak result: "
)

// relistPeakConfig is one child's work: impl's informer (one of
// relistInformer's) over n Pods whose page files are under Dir.
type relistPeakConfig struct {
	Impl      string
	N         int
	Dir       string
	WatchList bool // the server streams WatchLists, and the informers ask for them
}

// relistPeakResult is what one child measured, in bytes of live heap
// above what the process held before the informer started.
type relistPeakResult struct {
	SyncedHeap     uint64
	SyncPeak       uint64
	FewChangedPeak uint64
	AllChangedPeak uint64
	// FewChangedNotDecoded is how many Pods the relist with 5% changed
	// left undecoded; AllChangedNotDecoded likewise (ours; 0 for
	// client-go).
	FewChangedNotDecoded uint64
	AllChangedNotDecoded uint64
}

// TestRelistPeakChild is one process of BenchmarkRelistPeakOverHTTP; it
// skips unless that benchmark started it.
func TestRelistPeakChild(t *testing.T) {
	spec := os.Getenv(relistPeakEnv)
	if spec == "" {
		t.Skip("a process of BenchmarkRelistPeakOverHTTP; runs only when it starts one")
	}
	var cfg relistPeakConfig
	if err := json.Unmarshal([]byte(spec), &cfg); err != nil {
		t.Fatal(err)
	}
	res, err := runRelistPeak(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(res)
	fmt.Println(relistPeakPrefix + string(out))
}

// runRelistPeak runs cfg's informer against a new server of its page
// files, at GOGC 10: the sync, then the relist of each later version.
func runRelistPeak(cfg relistPeakConfig) (*relistPeakResult, error) {
	srv, err := openPageServer(cfg.Dir, cfg.N, cfg.WatchList)
	if err != nil {
		return nil, err
	}
	defer srv.close()
	hs := httptest.NewServer(srv)
	defer hs.Close()
	cs, err := protobufClientset(hs.URL)
	if err != nil {
		return nil, err
	}
	inf, stats, err := relistInformer(cfg.Impl, cs, cfg.WatchList)
	if err != nil {
		return nil, err
	}
	r := &relistPeakRun{srv: srv, n: cfg.N, h: &memHandler{}, notDecoded: func() uint64 { return 0 }}
	if stats != nil {
		r.notDecoded = func() uint64 { return stats().ItemsNotDecoded }
	}
	if _, err := inf.AddEventHandler(r.h); err != nil {
		return nil, err
	}
	memGOGC(memGCPercent)
	defer memGOGC(100)
	return r.measure(inf)
}

// relistPeakRun is one child's informer, as its phases see it.
type relistPeakRun struct {
	srv        *pageServer
	n          int
	h          *memHandler
	notDecoded func() uint64
}

// measure runs inf until the sync and both relists are measured.
func (r *relistPeakRun) measure(inf clientgocache.SharedIndexInformer) (*relistPeakResult, error) {
	res := &relistPeakResult{}
	base := liveHeapNow()
	stop, done := make(chan struct{}), make(chan struct{})
	peak, err := r.phase("sync", base, int64(r.n), memInitial, func() { go func() { inf.Run(stop); close(done) }() })
	defer func() { close(stop); <-done }()
	if err != nil {
		return nil, err
	}
	res.SyncPeak, res.SyncedHeap = peak, liveHeapNow()-base
	for _, v := range []int{memFewChanged, memAllChanged} {
		before := r.notDecoded()
		liveHeapNow()
		peak, err := r.phase(fmt.Sprintf("relist-%d", v), base, r.h.calls()+int64(r.n), v, func() { r.srv.expire(v) })
		if err != nil {
			return nil, err
		}
		if err := checkMemRelisted(inf.GetStore(), r.n, v); err != nil {
			return nil, err
		}
		if v == memFewChanged {
			res.FewChangedPeak, res.FewChangedNotDecoded = peak, r.notDecoded()-before
		} else {
			res.AllChangedPeak, res.AllChangedNotDecoded = peak, r.notDecoded()-before
		}
	}
	return res, nil
}

// phase samples the live heap's peak above base from start until the
// handler has had calls calls and the informer watches version v.
func (r *relistPeakRun) phase(name string, base uint64, calls int64, v int, start func()) (uint64, error) {
	peak := startProfiledPeak(name)
	start()
	err := r.h.wait(calls)
	if err == nil {
		err = r.srv.waitWatching(v)
	}
	return peak.finish(base), err
}

// The benchmark's child at a small size, in this process: the informers
// sync and relist from the page server over a real clientset, by LIST and
// by WatchList, and ours leaves every unchanged Pod of the 5% relist
// undecoded (by WatchList, but for each decoding goroutine's first).
func TestRelistPeakChildSmall(t *testing.T) {
	dir := t.TempDir()
	const n = 1200
	if err := writeRelistPeakPages(dir, n); err != nil {
		t.Fatal(err)
	}
	for _, watchList := range []bool{false, true} {
		for _, impl := range []string{"client-go", "kreflector+compact"} {
			res, err := runRelistPeak(relistPeakConfig{Impl: impl, N: n, Dir: dir, WatchList: watchList})
			if err != nil {
				t.Fatalf("%s, WatchList %v: %v", impl, watchList, err)
			}
			if res.SyncedHeap == 0 || res.FewChangedPeak == 0 || res.AllChangedPeak == 0 {
				t.Errorf("%s, WatchList %v: a figure is 0: %+v", impl, watchList, res)
			}
			least, most := uint64(n-n/20), uint64(n-n/20)
			if watchList {
				least -= uint64(runtime.GOMAXPROCS(0))
			}
			if impl == "client-go" {
				least, most = 0, 0
			}
			if res.FewChangedNotDecoded < least || res.FewChangedNotDecoded > most || res.AllChangedNotDecoded != 0 {
				t.Errorf("%s, WatchList %v: %d and %d Pods left undecoded by the relists, want %d to %d and 0",
					impl, watchList, res.FewChangedNotDecoded, res.AllChangedNotDecoded, least, most)
			}
		}
	}
	if _, err := runRelistPeak(relistPeakConfig{Impl: "kreflector+compcat", N: n, Dir: dir}); err == nil {
		t.Error("an implementation of no such name ran")
	}
}
