package cache

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kreflector/cache/cachetest"
)

// capturedLog is a funcr logger's output.
type capturedLog struct {
	mu    sync.Mutex
	lines []string
}

func (c *capturedLog) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.lines = append(c.lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 4})
}

func (c *capturedLog) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.lines, "\n")
}

// The Logger option is where a Reflector logs when its context carries no
// logger; a context's logger wins over it.
func TestLoggerOptionUnlessTheContextCarriesOne(t *testing.T) {
	forbidden := apierrors.NewForbidden(cmGVR, "", errors.New("no"))
	run := func(withContextLogger bool) (option, fromContext string) {
		var opt, inCtx capturedLog
		synctest.Test(t, func(t *testing.T) {
			lw := newScript([]listReply{{list: cmList("10", "", cm("a", "5"))}}, []watchReply{{err: forbidden}})
			lw.noWL = true
			l := opt.logger()
			r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), ReflectorOptions{Name: "logged", Logger: &l})
			ctx := t.Context()
			if withContextLogger {
				ctx = logr.NewContext(ctx, inCtx.logger())
			}
			ctx, cancel := context.WithCancel(ctx)
			r.watchErrorHandler = func(ctx context.Context, r *Reflector, err error) {
				DefaultWatchErrorHandler(ctx, r, err)
				cancel()
			}
			r.RunWithContext(ctx)
		})
		return opt.text(), inCtx.text()
	}
	option, _ := run(false)
	for _, want := range []string{"Listing and watching", "Caches populated", "Failed to watch"} {
		if !strings.Contains(option, want) {
			t.Errorf("the Logger option's logger lacks %q; it got:\n%s", want, option)
		}
	}
	option, fromContext := run(true)
	if option != "" || !strings.Contains(fromContext, "Failed to watch") {
		t.Errorf("with a logger in the context, the option's got:\n%s\nand the context's:\n%s", option, fromContext)
	}
}
