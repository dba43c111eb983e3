package cache_test

import (
	"context"
	"sync"
	"testing"

	"github.com/kreflector/cache"
)

// runReflector is the runner of the tests in package cache_test, which
// cannot reach helpers_test.go's startRun: it runs r in its own goroutine
// with a context derived from parent until stop is called or the test
// ends (through t.Cleanup, so inside a synctest bubble too). It returns
// the run's context, which stop ends; stop returns once RunWithContext
// has returned, and calling it again does nothing.
func runReflector(t testing.TB, parent context.Context, r *cache.Reflector) (ctx context.Context, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.RunWithContext(ctx)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	t.Cleanup(stop)
	return ctx, stop
}
