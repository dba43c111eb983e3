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
)

// BenchmarkMemorySideBySide compares client-go's SharedIndexInformer with
// ours on realistic Pods decoded from bytes for every LIST, each run in a
// process of its own so that no implementation's heap hides in another's.
// Every process measures every figure (heap per object, synced heap, the
// peaks of the initial sync and of two relists, sync time, CPU per watch
// event). Its rows, by encoding (memEncodings), each in a table with
// ratios to client-go's figure in the same encoding:
//
//   - JSON, typed Pods: client-go; ours with default options ("kreflector"),
//     ShareStrings ("+share"), "lean" (ShareStrings, ShareMaps and
//     DropManagedFields), Compact ("+compact") and Compact with
//     DropManagedFields ("+compact+lean");
//   - protobuf, typed Pods: client-go, kreflector, kreflector+compact,
//     kreflector+compact+lean;
//   - unstructured: the JSON pages and events decoded into
//     *unstructured.UnstructuredList and *unstructured.Unstructured as
//     client-go's dynamic client decodes them, the informers built for
//     &unstructured.Unstructured{} (as a dynamic informer is): the same
//     four.
//
// Then a table of decoding and sync time by encoding, and, for JSON and
// protobuf, one more process in which the implementations take turns
// (the time goals' figures), and the goals of issue 20 against the
// medians. At its default sizes it takes hours on 2 cores (about 70
// minutes before the protobuf and unstructured rows had heap figures;
// not timed since):
//
//	go test -run '^$' -bench BenchmarkMemorySideBySide -benchtime 1x -timeout 6h ./bench/
//
// KREFLECTOR_MEMBENCH_SIZES (default "10000,100000") and
// KREFLECTOR_MEMBENCH_RUNS (processes per implementation and size, default
// 3) and KREFLECTOR_MEMBENCH_IMPLS (implementations by name,
// comma-separated; default all; a name that is none is an error) and
// KREFLECTOR_MEMBENCH_ENCODINGS ("json", "protobuf", "unstructured",
// comma-separated; default all) change the work: only the named
// implementations run, in the named encodings that have them and in the
// turn-taking process. The compact rows of every
// encoding beside client-go's, at 100,000 Pods (one to two hours,
// estimated from a run at 2,000 Pods; client-go's unstructured relists
// peak near 8 GiB of live heap):
//
//	KREFLECTOR_MEMBENCH_SIZES=100000 KREFLECTOR_MEMBENCH_RUNS=1 \
//	KREFLECTOR_MEMBENCH_IMPLS=client-go,kreflector+compact,kreflector+compact+lean \
//	go test -run '^$' -bench BenchmarkMemorySideBySide -benchtime 1x -timeout 6h ./bench/
//
// Page files go to .cache/membench at the repository root (about 4 GB at
// the default sizes; the unstructured rows read the JSON ones), kept for
// the next run.
func BenchmarkMemorySideBySide(b *testing.B) {
	sizes, runs, dir := memBenchSettings(b, "KREFLECTOR_MEMBENCH", "10000,100000")
	if err := checkMemImplsEnv(); err != nil {
		b.Fatal(err)
	}
	if err := writeAllMemPages(dir, sizes); err != nil {
		b.Fatal(err)
	}
	all := map[memKey][]memResult{}
	for rep := range runs {
		for _, n := range sizes {
			cfgs := memConfigs(dir, n, rep == 0)
			for k := range cfgs {
				// The order turns with each repetition, so no
				// implementation always runs first.
				cfg := cfgs[(k+rep)%len(cfgs)]
				res, err := runMemChildProcess(cfg)
				if err != nil {
					b.Fatal(err)
				}
				all[cfg.key()] = append(all[cfg.key()], *res)
			}
		}
	}
	printMemTables(os.Stdout, sizes, runs, all)
}

// memBenchSettings reads a memory benchmark's settings: the sizes from
// prefix+"_SIZES" (default sizes), the processes per implementation and
// size from prefix+"_RUNS" (default 3); and makes the page files'
// directory.
func memBenchSettings(b *testing.B, prefix, sizesDefault string) (sizes []int, runs int, dir string) {
	sizes, err := parseMemSizes(cmpEnv(prefix+"_SIZES", sizesDefault))
	if err != nil {
		b.Fatal(err)
	}
	runs, err = strconv.Atoi(cmpEnv(prefix+"_RUNS", "3"))
	if err != nil || runs < 1 {
		b.Fatalf("bad %s_RUNS: %v", prefix, err)
	}
	if dir, err = memPagesDir(); err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		b.Fatal(err)
	}
	return sizes, runs, dir
}

// memPagesDir is .cache/membench in the module's root: the nearest
// directory up from the working one that holds go.mod. go test runs in
// the package's directory (bench/); a binary built with -c runs wherever
// it is started. The children are given the path.
func memPagesDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, ".cache", "membench"), nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("membench: no go.mod above the working directory")
		}
		dir = up
	}
}

func TestMemPagesDir(t *testing.T) {
	dir, err := memPagesDir()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(filepath.Dir(dir))
	if filepath.Base(dir) != "membench" || filepath.Base(filepath.Dir(dir)) != ".cache" {
		t.Errorf("memPagesDir() = %s, want .../.cache/membench", dir)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Errorf("no go.mod beside %s: %v", filepath.Dir(dir), err)
	}
	if _, err := os.Stat(filepath.Join(root, "bench")); err != nil {
		t.Errorf("%s is not the repository root: %v", root, err)
	}
}

// memKey identifies a configuration across repetitions.
type memKey struct {
	impl, encoding string
	n              int
}

func (c memChildConfig) key() memKey { return memKey{c.Impl, c.Encoding, c.N} }

// memImplOrder is the order of the tables' columns.
var memImplOrder = []string{"client-go", "kreflector", "kreflector+share", "kreflector+lean", "kreflector+compact", "kreflector+compact+lean"}

// memEncoding is one way the Pods reach the informers, and the
// implementations run on it, in memImplOrder's order.
type memEncoding struct {
	name  string // memChildConfig.Encoding; see memCodecOf
	impls []string
}

// memEncodings are the encodings, in the order of the tables: every
// implementation on typed Pods from JSON; client-go's, our default and
// the compact store's (plain and with DropManagedFields) on typed Pods
// from protobuf, and on unstructured objects from JSON (as a dynamic
// informer holds them).
var memEncodings = []memEncoding{
	{"json", memImplOrder},
	{"protobuf", memCompactRows},
	{"unstructured", memCompactRows},
}

// memCompactRows are the implementations run on protobuf and unstructured.
var memCompactRows = []string{"client-go", "kreflector", "kreflector+compact", "kreflector+compact+lean"}

// memEncodingOf is the encoding named name (nil if none is).
func memEncodingOf(name string) *memEncoding {
	for i := range memEncodings {
		if memEncodings[i].name == name {
			return &memEncodings[i]
		}
	}
	return nil
}

// memSideEncodings are the encodings of the side-by-side process.
var memSideEncodings = []string{"json", "protobuf"}

// memConfigs are the processes run for n Pods: each encoding's
// implementations, each with every phase; with side, the side-by-side
// process too, once per encoding of memSideEncodings (its rounds are
// within). Only the implementations KREFLECTOR_MEMBENCH_IMPLS asks for
// run, in every encoding and in the side-by-side process.
func memConfigs(dir string, n int, side bool) []memChildConfig {
	var cfgs []memChildConfig
	for _, e := range memEncodings {
		if !memEncodingWanted(e.name) {
			continue
		}
		for _, impl := range e.impls {
			if memImplWanted(impl) {
				cfgs = append(cfgs, memChildConfig{Impl: impl, N: n, Encoding: e.name, Dir: dir})
			}
		}
	}
	var wanted []string
	for _, impl := range memImplOrder {
		if memImplWanted(impl) {
			wanted = append(wanted, impl)
		}
	}
	if side && len(wanted) > 0 {
		for _, enc := range memSideEncodings {
			if memEncodingWanted(enc) {
				cfgs = append(cfgs, memChildConfig{Impl: memSideImpl, N: n, Encoding: enc, Dir: dir, SideBySide: true, SideImpls: wanted})
			}
		}
	}
	return cfgs
}

// memEncodingWanted says whether KREFLECTOR_MEMBENCH_ENCODINGS (a
// comma-separated list of "json", "protobuf", "unstructured"; unset: all)
// asks for enc.
func memEncodingWanted(enc string) bool {
	list := os.Getenv("KREFLECTOR_MEMBENCH_ENCODINGS")
	return list == "" || slices.Contains(strings.Split(list, ","), enc)
}

// memImplWanted says whether KREFLECTOR_MEMBENCH_IMPLS (a comma-separated
// list of implementations; unset: all) asks for impl.
func memImplWanted(impl string) bool {
	list := os.Getenv("KREFLECTOR_MEMBENCH_IMPLS")
	return list == "" || slices.Contains(strings.Split(list, ","), impl)
}

// checkMemImplsEnv says which name of KREFLECTOR_MEMBENCH_IMPLS is no
// implementation, if one is not (a misspelt name would leave its rows
// out without a word).
func checkMemImplsEnv() error {
	list := os.Getenv("KREFLECTOR_MEMBENCH_IMPLS")
	if list == "" {
		return nil
	}
	for _, impl := range strings.Split(list, ",") {
		if !slices.Contains(memImplOrder, impl) {
			return fmt.Errorf("KREFLECTOR_MEMBENCH_IMPLS: no implementation %q (there are %s)", impl, strings.Join(memImplOrder, ", "))
		}
	}
	return nil
}

func TestMemConfigs(t *testing.T) {
	count := func(cfgs []memChildConfig) map[string][]string {
		got := map[string][]string{}
		for _, c := range cfgs {
			if c.N != 3 || c.Dir != "d" {
				t.Errorf("config %+v: not for 3 Pods in d", c)
			}
			if c.SideBySide {
				got["side "+c.Encoding] = c.SideImpls
			} else {
				got[c.Encoding] = append(got[c.Encoding], c.Impl)
			}
		}
		return got
	}
	t.Setenv("KREFLECTOR_MEMBENCH_IMPLS", "")
	got := count(memConfigs("d", 3, true))
	want := map[string][]string{
		"json":          memImplOrder,
		"protobuf":      {"client-go", "kreflector", "kreflector+compact", "kreflector+compact+lean"},
		"unstructured":  {"client-go", "kreflector", "kreflector+compact", "kreflector+compact+lean"},
		"side json":     memImplOrder,
		"side protobuf": memImplOrder,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("every implementation:\n%v\nwant\n%v", got, want)
	}
	if got := count(memConfigs("d", 3, false)); got["side json"] != nil || got["side protobuf"] != nil {
		t.Errorf("a side-by-side process without side: %v", got)
	}
	t.Setenv("KREFLECTOR_MEMBENCH_IMPLS", "kreflector+compact,client-go")
	got = count(memConfigs("d", 3, true))
	pair := []string{"client-go", "kreflector+compact"}
	want = map[string][]string{"json": pair, "protobuf": pair, "unstructured": pair, "side json": pair, "side protobuf": pair}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("KREFLECTOR_MEMBENCH_IMPLS=%s:\n%v\nwant\n%v", os.Getenv("KREFLECTOR_MEMBENCH_IMPLS"), got, want)
	}
	if err := checkMemImplsEnv(); err != nil {
		t.Error(err)
	}
	t.Setenv("KREFLECTOR_MEMBENCH_IMPLS", "kreflector+share")
	if got := count(memConfigs("d", 3, true)); fmt.Sprint(got) != fmt.Sprint(map[string][]string{
		"json": {"kreflector+share"}, "side json": {"kreflector+share"}, "side protobuf": {"kreflector+share"}}) {
		t.Errorf("kreflector+share alone: %v", got)
	}
	t.Setenv("KREFLECTOR_MEMBENCH_IMPLS", "client-go,kreflector+compcat")
	if err := checkMemImplsEnv(); err == nil || !strings.Contains(err.Error(), "compcat") {
		t.Errorf("a misspelt implementation: %v", err)
	}
	for _, e := range memEncodings {
		for _, impl := range e.impls {
			if memImpls[impl] == nil {
				t.Errorf("%s: no implementation %q", e.name, impl)
			}
		}
		if memEncodingOf(e.name) == nil || memCodecOf(e.name).file == "" {
			t.Errorf("encoding %q: not found, or no page files", e.name)
		}
	}
}

func writeAllMemPages(dir string, sizes []int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := memPageFiles()
	for _, n := range sizes {
		for v := range memVersions {
			for _, enc := range files {
				if err := writeMemPages(memPagesPath(dir, n, v, enc), n, v, enc); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// memPageFiles are the page files the wanted encodings read (see
// memCodecOf): "protobuf" for protobuf, "json" for JSON and unstructured.
// At 1,000,000 Pods the JSON files alone are about 20 GB, so a protobuf
// run writes none.
func memPageFiles() []string {
	var files []string
	for _, e := range memEncodings {
		if f := memCodecOf(e.name).file; memEncodingWanted(e.name) && !slices.Contains(files, f) {
			files = append(files, f)
		}
	}
	return files
}

// runMemChildProcess runs this test binary again as one child process.
func runMemChildProcess(cfg memChildConfig) (*memResult, error) {
	spec, _ := json.Marshal(cfg)
	return runChildProcess[memResult]("membench", "TestMemChild", memResultPrefix, spec, memChildEnv+"="+string(spec))
}

// cmpEnv is the environment variable name, or def if unset or empty.
func cmpEnv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// median is the median of f over rs (the lower middle for an even count).
func median(rs []memResult, f func(memResult) float64) float64 { return medianOf(rs, f) }

// medianOf is the median (see middle) of f over rs.
func medianOf[R any](rs []R, f func(R) float64) float64 {
	vs := make([]float64, len(rs))
	for i, r := range rs {
		vs[i] = f(r)
	}
	return middle(vs)
}

// middle is the median of vs (the lower of the two middle values when
// their number is even), sorting vs in place; 0 if vs is empty.
func middle(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	slices.Sort(vs)
	return vs[(len(vs)-1)/2]
}

func TestMemPageFiles(t *testing.T) {
	for _, c := range []struct{ encodings, want string }{
		{"", "json,protobuf"},
		{"protobuf", "protobuf"},
		{"unstructured", "json"},
		{"unstructured,protobuf,json", "json,protobuf"},
	} {
		t.Setenv("KREFLECTOR_MEMBENCH_ENCODINGS", c.encodings)
		if got := strings.Join(memPageFiles(), ","); got != c.want {
			t.Errorf("KREFLECTOR_MEMBENCH_ENCODINGS=%q: page files %s, want %s", c.encodings, got, c.want)
		}
	}
}
