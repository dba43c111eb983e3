package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkColdStart compares a Pod informer's cold start through the
// whole client stack: a kubernetes.Clientset (client-go's REST client)
// over HTTP to a server in this process that answers from bytes encoded
// beforehand (coldserver_test.go), and on it client-go's
// informers.NewSharedInformerFactory, ours (package informers) with
// default options, ours lean (ShareStrings, ShareMaps,
// DropManagedFields), and ours compact (ReflectorOptions.Compact). Each cell of encoding (JSON, protobuf) × mode (a
// LIST paginated by 500, a LIST at RV "0" answered whole, a WatchList
// stream) × compression (off; on: gzip as kube-apiserver compresses, see
// coldgzip_test.go) × GOMAXPROCS (1, 2) × implementation runs in
// processes of its own (coldchild_test.go), measuring the sync time and
// the peak live heap, and what the sync cost the server. At the defaults
// it takes 4-10 hours on 2 shared cores (docs/benchmarks.md):
//
//	go test -run '^$' -bench BenchmarkColdStart -benchtime 1x -timeout 8h ./bench/
//
// KREFLECTOR_COLDSTART_PODS (default 100000), KREFLECTOR_COLDSTART_RUNS
// (processes per cell, default 3), KREFLECTOR_COLDSTART_CELLS (a
// selection, such as "enc=json,protobuf mode=paged,watchlist gzip=on
// procs=2 impl=client-go,kreflector"; each dimension left out is taken
// whole)
// and KREFLECTOR_COLDSTART_HEAP=0 (the timed sync only, no heap figures:
// about a third of the time) change the work; KREFLECTOR_COLDSTART_CPUPROFILE
// (a directory) has each process write its timed sync's CPU profile there,
// and with KREFLECTOR_COLDSTART_TRACE=1 its execution trace beside it. It prints how long it
// expects to take, each process's figures as it ends, then a table. The
// files go to .cache/coldstart at the repository root (about 3.2 GB for
// 100,000 Pods in both encodings), kept for the next run.
func BenchmarkColdStart(b *testing.B) {
	set, err := coldSettingsFromEnv()
	if err != nil {
		b.Fatal(err)
	}
	srv, err := prepareCold(set)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.close()
	cells := set.cells()
	fmt.Fprintf(os.Stderr, "coldstart: %d Pods, %d cells, %d runs each; expect about %s\n",
		set.n, len(cells), set.runs, coldEstimate(set, cells).Round(time.Minute))
	started := time.Now()
	all := map[coldCell][]coldResult{}
	var problems []string
	for rep := range set.runs {
		for _, group := range coldGroups(cells) {
			for k := range group {
				// The order turns with each repetition, so no
				// implementation always runs first.
				cell := group[(k+rep)%len(group)]
				srv.setMode(cell.Mode)
				srv.setGzip(cell.Gzip)
				if err := srv.warm(cell.Encoding, cell.Mode); err != nil {
					b.Fatal(err)
				}
				res, err := runColdChildProcess(coldChildConfig{coldCell: cell, N: set.n, URL: srv.url, NoHeap: set.noHeap, CPUProfile: set.profileOf(cell, rep)})
				if err != nil {
					b.Fatal(err)
				}
				problems = append(problems, checkCold(res)...)
				all[cell] = append(all[cell], *res)
				coldProgress(res, rep, time.Since(started))
			}
		}
	}
	printColdTable(os.Stdout, set, cells, all)
	if len(problems) > 0 {
		b.Errorf("coldstart: the cells did not all do the same work:\n%s", strings.Join(problems, "\n"))
	}
}

// coldProgress prints one process's figures as it ends.
func coldProgress(res *coldResult, rep int, since time.Duration) {
	heap := ""
	if !res.NoHeap {
		heap = fmt.Sprintf("; at GOGC 10 sync %.2f s, peak %.0f MiB", res.Sync2, float64(res.Peak)/mib)
	}
	fmt.Fprintf(os.Stderr, "coldstart: %s run %d: sync %.2f s, CPU %.2f s, %.1f other cores%s (%s in)\n",
		res.coldCell, rep+1, res.SyncSeconds, res.SyncCPU, res.Elsewhere, heap, since.Round(time.Second))
}

// coldSettings are the benchmark's settings.
type coldSettings struct {
	n, runs int
	noHeap  bool // KREFLECTOR_COLDSTART_HEAP=0: no heap phase
	// profiles is the directory of CPU profiles, if any
	// (KREFLECTOR_COLDSTART_CPUPROFILE).
	profiles string
	// dims is the selection: encodings, modes, compression (off, on),
	// GOMAXPROCS values and implementations, each in the tables' order.
	encs, modes, gzips, procs, impls []string
}

var coldDims = map[string][]string{
	"enc":   {"json", "protobuf"},
	"mode":  {"paged", "whole", "watchlist"},
	"gzip":  {"off", "on"},
	"procs": {"1", "2"},
	"impl":  {"client-go", "kreflector", "kreflector+lean", "kreflector+compact"},
}

func coldSettingsFromEnv() (coldSettings, error) {
	var s coldSettings
	var err error
	if s.n, err = strconv.Atoi(cmpEnv("KREFLECTOR_COLDSTART_PODS", "100000")); err != nil || s.n < 1 {
		return s, fmt.Errorf("coldstart: bad KREFLECTOR_COLDSTART_PODS (%v)", err)
	}
	if s.runs, err = strconv.Atoi(cmpEnv("KREFLECTOR_COLDSTART_RUNS", "3")); err != nil || s.runs < 1 {
		return s, fmt.Errorf("coldstart: bad KREFLECTOR_COLDSTART_RUNS (%v)", err)
	}
	switch h := cmpEnv("KREFLECTOR_COLDSTART_HEAP", "1"); h {
	case "0", "1":
		s.noHeap = h == "0"
	default:
		return s, fmt.Errorf("coldstart: KREFLECTOR_COLDSTART_HEAP is %q, want 0 or 1", h)
	}
	s.profiles = os.Getenv("KREFLECTOR_COLDSTART_CPUPROFILE")
	sel, err := parseColdCells(os.Getenv("KREFLECTOR_COLDSTART_CELLS"))
	s.encs, s.modes, s.gzips, s.procs, s.impls = sel["enc"], sel["mode"], sel["gzip"], sel["procs"], sel["impl"]
	return s, err
}

// parseColdCells parses a selection: space- or semicolon-separated
// dim=value,value terms; a dimension not named is taken whole, and values
// keep coldDims' order.
func parseColdCells(spec string) (map[string][]string, error) {
	sel := map[string][]string{}
	for dim, all := range coldDims {
		sel[dim] = all
	}
	for _, term := range strings.FieldsFunc(spec, func(r rune) bool { return r == ' ' || r == ';' }) {
		dim, values, ok := strings.Cut(term, "=")
		all, known := coldDims[dim]
		if !ok || !known {
			return nil, fmt.Errorf("coldstart: bad KREFLECTOR_COLDSTART_CELLS term %q (want enc=, mode=, gzip=, procs= or impl=)", term)
		}
		want := strings.Split(values, ",")
		for _, v := range want {
			if !slices.Contains(all, v) {
				return nil, fmt.Errorf("coldstart: no %s %q (have %s)", dim, v, strings.Join(all, ", "))
			}
		}
		sel[dim] = slices.DeleteFunc(slices.Clone(all), func(v string) bool { return !slices.Contains(want, v) })
	}
	return sel, nil
}

// cells are the selected cells, implementations innermost.
func (s coldSettings) cells() []coldCell {
	var out []coldCell
	for _, enc := range s.encs {
		for _, mode := range s.modes {
			for _, gz := range s.gzips {
				for _, p := range s.procs {
					procs, _ := strconv.Atoi(p)
					for _, impl := range s.impls {
						out = append(out, coldCell{Encoding: enc, Mode: mode, Procs: procs, Impl: impl, Gzip: gz == "on"})
					}
				}
			}
		}
	}
	return out
}

// coldGroups splits cells, in order, into runs of the same encoding,
// mode, compression and GOMAXPROCS.
func coldGroups(cells []coldCell) [][]coldCell {
	var out [][]coldCell
	for i, c := range cells {
		prev := coldCell{}
		if i > 0 {
			prev = cells[i-1]
		}
		if i == 0 || c.Encoding != prev.Encoding || c.Mode != prev.Mode || c.Gzip != prev.Gzip || c.Procs != prev.Procs {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], c)
	}
	return out
}

// prepareCold writes the files the selection needs and starts the
// server.
func prepareCold(set coldSettings) (*coldServer, error) {
	dir, err := coldDir()
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		return nil, err
	}
	for _, enc := range set.encs {
		start := time.Now()
		if err := writeColdFiles(dir, set.n, enc); err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "coldstart: %s files of %d Pods ready in %s\n", enc, set.n, time.Since(start).Round(time.Millisecond))
	}
	return startColdServer(dir, set.n, set.encs)
}

// coldEstimate is a rough duration of the benchmark: per process its
// start, the timed sync and, unless set.noHeap, the one at GOGC 10 (about
// three times as long), at the wall times per Pod seen at 100,000 Pods on
// the 2-core machine of docs/benchmarks.md while other work kept about
// 1.5 cores busy, before LIST decoding was parallel.
func coldEstimate(set coldSettings, cells []coldCell) time.Duration {
	var total time.Duration
	for _, c := range cells {
		sync := time.Duration(set.n) * map[string]time.Duration{
			"json/paged": 470, "json/whole": 470, "json/watchlist": 850,
			"protobuf/paged": 160, "protobuf/whole": 160, "protobuf/watchlist": 170,
		}[c.Encoding+"/"+c.Mode] * time.Microsecond
		if !set.noHeap {
			sync *= 4
		}
		total += 2*time.Second + sync
	}
	return total * time.Duration(set.runs)
}

// runColdChildProcess runs this test binary again as one child process.
func runColdChildProcess(cfg coldChildConfig) (*coldResult, error) {
	spec, _ := json.Marshal(cfg)
	return runChildProcess[coldResult]("coldstart", "TestColdChild", coldResultPrefix, spec,
		coldChildEnv+"="+string(spec),
		"GOMAXPROCS="+strconv.Itoa(cfg.Procs),
		"KUBE_FEATURE_WatchListClient="+strconv.FormatBool(cfg.Mode == "watchlist"))
}

// checkCold says how res's work differs from what its cell should do:
// every Pod in the store, each sync alike, the requests its mode makes
// (a WatchList stream and nothing else, or the LIST and one watch), all
// in its encoding.
func checkCold(res *coldResult) []string {
	var out []string
	bad := func(format string, args ...any) {
		out = append(out, res.coldCell.String()+": "+fmt.Sprintf(format, args...))
	}
	if res.Objects != res.N || (!res.NoHeap && res.Objects2 != res.N) {
		bad("%d and %d objects in the store, want %d", res.Objects, res.Objects2, res.N)
	}
	if !res.NoHeap && res.Cost != res.Cost2 {
		bad("the two syncs cost %+v and %+v", res.Cost, res.Cost2)
	}
	want := coldStats{Watches: 1}
	switch res.Mode {
	case "paged":
		want.Pages = int64((res.N + coldPageSize - 1) / coldPageSize)
	case "whole":
		want.Whole = 1
	case "watchlist":
		want = coldStats{WatchLists: 1}
	}
	if res.Encoding == "protobuf" {
		want.Protobuf = want.requests()
	}
	got := res.Cost
	if got.Gzipped == 0 && res.Gzip && res.N >= 2*coldPageSize {
		bad("nothing was compressed")
	}
	if got.Gzipped != 0 && !res.Gzip {
		bad("%d responses compressed with gzip off", got.Gzipped)
	}
	got.Bytes, got.Gzipped = 0, 0
	if got != want {
		bad("served %+v, want %+v", got, want)
	}
	return out
}

// profileOf is the file of the CPU profile of cell's run rep, or "".
func (s coldSettings) profileOf(cell coldCell, rep int) string {
	if s.profiles == "" {
		return ""
	}
	mode := cell.Mode
	if cell.Gzip {
		mode += "+gzip"
	}
	name := fmt.Sprintf("%s-%s-p%d-%s-run%d.pprof", cell.Encoding, mode, cell.Procs, cell.Impl, rep+1)
	return filepath.Join(s.profiles, name)
}
