package cache_test

import (
	"context"
	"testing"

	"github.com/kreflector/cache"
)

// runReflector runs r until stop is called or the test ends, with a
// context derived from parent, through the package's own test runner
// (cache.StartRunIn, helpers_test.go): stop returns once RunWithContext
// has returned, and calling it again does nothing.
func runReflector(t testing.TB, parent context.Context, r *cache.Reflector) (ctx context.Context, stop func()) {
	t.Helper()
	return cache.StartRunIn(t, parent, r.RunWithContext)
}
