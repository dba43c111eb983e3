// Package bench is the benchmark harness: our Reflector and
// SharedIndexInformer side by side with client-go's on identical work
// (bench_test.go, bench_shard_test.go, informer_bench_test.go,
// watchpath_bench_test.go, with the kit in benchkit_test.go), the
// memory benchmark, one process per implementation (mem*_test.go), and
// the cold-start benchmark through a real clientset over HTTP, one
// process per cell (cold*_test.go), with the bound under it measured
// without HTTP (coldbound_test.go). It
// uses only the exported API of package cache and has no non-test files;
// the realistic Pods come from internal/podgen. See docs/benchmarks.md.
package bench

import (
	"os"
	"testing"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// TestMain drops utilruntime's global error handlers, as the root
// package's TestMain does, so the benchmarks run as they did there: no
// error rate limiter sleeping between the errors client-go's Reflector
// reports.
func TestMain(m *testing.M) {
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{}
	os.Exit(m.Run())
}
