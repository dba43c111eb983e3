package cache

import (
	"os"
	"testing"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// TestMain drops utilruntime's global error rate limiter, which client-go's
// Reflector calls: it remembers wall-clock time from before a synctest
// bubble and would put the bubble to sleep for years.
func TestMain(m *testing.M) {
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{}
	os.Exit(m.Run())
}
