package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kreflector/cache/internal/podgen"
)

// BenchmarkColdStartBound measures what bounds a protobuf LIST's cold
// start on this machine, with no HTTP, Reflector or store: 100,000
// realistic Pods made into objects that are all kept, as a sync keeps
// them, in three ways, each in processes of its own at GOMAXPROCS 2:
//
//   - decode, 1 goroutine: the generated Unmarshal of each Pod's bytes on
//     one goroutine, as client-go's decoder does (the other core is left
//     to the collector);
//   - decode, 2 goroutines: the same split perfectly in two halves, as a
//     parallel decoder at no cost of its own would;
//   - copy, 2 goroutines: DeepCopyInto from decoded Pods, split in two:
//     objects equal to client-go's with no bytes read at all. A copy
//     shares its strings' bytes with the Pod it copies (63 allocations
//     and 9.1 KB per Pod against Unmarshal's 214 and 14.6 KB), so it does
//     less than any decoder of client-go's objects must: a bound below
//     them all.
//
// Each runs twice: on fresh memory, as a new process meets it, and on
// memory already faulted in (the process first touches and frees 2 GiB
// of heap), which tells most of the kernel's share (page faults on first
// touch) from the rest. The ratio of a way's time to the first way's is
// what a decoder of that kind can reach at best against client-go's
// decoding here. 2,000 distinct Pods are cycled, so the input stays small
// next to what is kept.
//
//	go test -run '^$' -bench BenchmarkColdStartBound -benchtime 1x ./bench/
//
// KREFLECTOR_BOUND_RUNS (default 5) is the processes per way and memory.
func BenchmarkColdStartBound(b *testing.B) {
	runs := 5
	if v := os.Getenv("KREFLECTOR_BOUND_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("KREFLECTOR_BOUND_RUNS=%q: want a positive number", v)
		}
		runs = n
	}
	results := map[boundChildConfig][]boundResult{}
	for range runs {
		for _, faulted := range []bool{false, true} {
			for _, way := range boundWays {
				cfg := boundChildConfig{Way: way, N: boundPods, Faulted: faulted}
				spec, _ := json.Marshal(cfg) // plain fields: it cannot fail
				r, err := runChildProcess[boundResult]("bound", "TestColdBoundChild", boundResultPrefix, spec,
					boundChildEnv+"="+string(spec), "GOMAXPROCS=2")
				if err != nil {
					b.Fatal(err)
				}
				results[cfg] = append(results[cfg], *r)
			}
		}
	}
	printBoundTable(runs, results)
}

// boundPods is how many Pods each process makes and keeps.
const boundPods = 100000

// boundWays are the ways of making the objects, the baseline first.
var boundWays = []string{"decode, 1 goroutine", "decode, 2 goroutines", "copy, 2 goroutines"}

const (
	boundChildEnv     = "KREFLECTOR_BOUND_CHILD"
	boundResultPrefix = "BOUND_RESULT "
)

// boundChildConfig is one process's work: the way, how many Pods, and
// whether the heap is faulted in first.
type boundChildConfig struct {
	Way     string
	N       int
	Faulted bool
}

// boundResult is the timed part's wall time and the process's user and
// system CPU time meanwhile, in seconds.
type boundResult struct{ Wall, User, Sys float64 }

// TestColdBoundChild is one process of BenchmarkColdStartBound, run only
// when that benchmark starts it.
func TestColdBoundChild(t *testing.T) {
	spec := os.Getenv(boundChildEnv)
	if spec == "" {
		t.Skip("a process of BenchmarkColdStartBound; runs only when it starts one")
	}
	var cfg boundChildConfig
	if err := json.Unmarshal([]byte(spec), &cfg); err != nil {
		t.Fatal(err)
	}
	res, err := runBound(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(res)
	fmt.Println(boundResultPrefix + string(out))
}

// runBound makes and keeps cfg.N Pods the way cfg names, on memory
// faulted in first if cfg.Faulted, and returns the time and CPU that took.
// An error (a Pod that failed to decode) comes with the figures so far.
func runBound(cfg boundChildConfig) (*boundResult, error) {
	raw, decoded, err := boundInput(2000)
	if err != nil {
		return nil, err
	}
	memGOGC(100)
	if cfg.Faulted {
		faultIn(2 << 30)
	}
	kept := make([]corev1.Pod, cfg.N)
	part := func(lo, hi int) error {
		for i := lo; i < hi; i++ {
			if cfg.Way == boundWays[2] {
				decoded[i%len(decoded)].DeepCopyInto(&kept[i])
				continue
			}
			if err := kept[i].Unmarshal(raw[i%len(raw)]); err != nil {
				return fmt.Errorf("bound: Pod %d: %w", i, err)
			}
		}
		return nil
	}
	runtime.GC()
	user0, sys0 := processTimes()
	start := time.Now()
	if cfg.Way == boundWays[0] {
		err = part(0, cfg.N)
	} else {
		err = boundHalves(cfg.N, part)
	}
	wall := time.Since(start)
	user1, sys1 := processTimes()
	runtime.KeepAlive(kept)
	return &boundResult{Wall: wall.Seconds(), User: (user1 - user0).Seconds(), Sys: (sys1 - sys0).Seconds()}, err
}

// faultIn touches every page of n bytes of heap and lets them go, so that
// the allocations after it reuse memory the kernel has already mapped.
func faultIn(n int) {
	chunks := make([][]byte, 0, n>>20)
	for range n >> 20 {
		b := make([]byte, 1<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		chunks = append(chunks, b)
	}
	runtime.KeepAlive(chunks)
	runtime.GC()
}

// boundHalves runs part on [0, n/2) and [n/2, n) at once.
func boundHalves(n int, part func(lo, hi int) error) error {
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for k := range 2 {
		wg.Go(func() { errs[k] = part(k*n/2, (k+1)*n/2) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// boundInput is n realistic Pods' protobuf bytes and the Pods decoded
// from them.
func boundInput(n int) ([][]byte, []corev1.Pod, error) {
	raw, decoded := make([][]byte, n), make([]corev1.Pod, n)
	for i := range raw {
		b, err := podgen.Pod(i, 1000+i).Marshal()
		if err != nil {
			return nil, nil, fmt.Errorf("bound: encoding Pod %d: %w", i, err)
		}
		raw[i] = b
		if err := decoded[i].Unmarshal(b); err != nil {
			return nil, nil, fmt.Errorf("bound: decoding Pod %d: %w", i, err)
		}
	}
	return raw, decoded, nil
}

// printBoundTable prints the medians of each way on each memory, and
// each way's time against the first way's on the same memory.
func printBoundTable(runs int, results map[boundChildConfig][]boundResult) {
	fmt.Fprintf(os.Stderr, "\n%d Pods kept, protobuf, GOMAXPROCS 2, medians of %d processes:\n\n", boundPods, runs)
	fmt.Fprintln(os.Stderr, "| memory | way | time (s) | ×decode, 1 goroutine | user CPU (s) | system CPU (s) |")
	fmt.Fprintln(os.Stderr, "|---|---|---:|---:|---:|---:|")
	for _, faulted := range []bool{false, true} {
		memory := "fresh"
		if faulted {
			memory = "faulted in"
		}
		med := func(way string, f func(boundResult) float64) float64 {
			return medianOf(results[boundChildConfig{Way: way, N: boundPods, Faulted: faulted}], f)
		}
		base := med(boundWays[0], boundWall)
		for _, way := range boundWays {
			fmt.Fprintf(os.Stderr, "| %s | %s | %.2f | %.2fx | %.2f | %.2f |\n", memory, way,
				med(way, boundWall), med(way, boundWall)/base, med(way, boundUser), med(way, boundSys))
		}
	}
}

// boundWall, boundUser and boundSys pick a figure of a result.
func boundWall(r boundResult) float64 { return r.Wall }
func boundUser(r boundResult) float64 { return r.User }
func boundSys(r boundResult) float64  { return r.Sys }
