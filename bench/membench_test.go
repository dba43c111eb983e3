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
// ours (default options; ShareStrings; "lean": ShareStrings, ShareMaps and
// DropManagedFields) on realistic Pods decoded from bytes for every LIST,
// each run in a process of its own so that no implementation's heap hides
// in another's. It takes about 40 minutes at its default sizes on 2 cores:
//
//	go test -run '^$' -bench BenchmarkMemorySideBySide -benchtime 1x -timeout 3h ./bench/
//
// KREFLECTOR_MEMBENCH_SIZES (default "10000,100000") and
// KREFLECTOR_MEMBENCH_RUNS (processes per implementation and size, default
// 3) and KREFLECTOR_MEMBENCH_IMPLS (the JSON rows' implementations, by
// name; default all) change the work. Page files go to .cache/membench at the repository
// root (about 4 GB at the default sizes), kept for the next run. It prints
// a table of medians and the goals of issue 20 against them.
func BenchmarkMemorySideBySide(b *testing.B) {
	sizes, runs, dir := memBenchSettings(b, "KREFLECTOR_MEMBENCH", "10000,100000")
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

// memImplOrder is the order of the tables' rows.
var memImplOrder = []string{"client-go", "kreflector", "kreflector+share", "kreflector+lean", "kreflector+compact", "kreflector+compact+lean"}

// memConfigs are the processes run for n Pods: every implementation on
// JSON, and client-go's and ours on protobuf, timing only; with side, the
// side-by-side process too, once per encoding (its rounds are within).
func memConfigs(dir string, n int, side bool) []memChildConfig {
	var cfgs []memChildConfig
	for _, impl := range memImplOrder {
		if memImplWanted(impl) {
			cfgs = append(cfgs, memChildConfig{Impl: impl, N: n, Encoding: "json", Dir: dir})
		}
	}
	for _, impl := range memImplOrder[:2] {
		cfgs = append(cfgs, memChildConfig{Impl: impl, N: n, Encoding: "protobuf", Dir: dir, TimeOnly: true})
	}
	if side {
		for _, enc := range []string{"json", "protobuf"} {
			cfgs = append(cfgs, memChildConfig{Impl: memSideImpl, N: n, Encoding: enc, Dir: dir, SideBySide: true})
		}
	}
	return cfgs
}

// memImplWanted says whether KREFLECTOR_MEMBENCH_IMPLS (a comma-separated
// list of implementations; unset: all) asks for impl.
func memImplWanted(impl string) bool {
	list := os.Getenv("KREFLECTOR_MEMBENCH_IMPLS")
	return list == "" || slices.Contains(strings.Split(list, ","), impl)
}

func writeAllMemPages(dir string, sizes []int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, n := range sizes {
		for v := range memVersions {
			for _, enc := range []string{"json", "protobuf"} {
				if err := writeMemPages(memPagesPath(dir, n, v, enc), n, v, enc); err != nil {
					return err
				}
			}
		}
	}
	return nil
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
