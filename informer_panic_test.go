package cache

import (
	"bytes"
	"context"
	"fmt"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	"k8s.io/utils/ptr"
)

// runRecovering runs run with a context nobody cancels and returns what
// it panicked with. The context is never cancelled, so that a goroutine
// run leaves behind blocks for good and synctest reports it.
func runRecovering(run func(context.Context)) (recovered any) {
	defer func() { recovered = recover() }()
	run(context.Background())
	return nil
}

// A panic in the processing loop of a controller leaves Run at once, as
// in client-go, not when the context ends, and every goroutine Run
// started has stopped by then.
func TestControllerPanicLeavesRunAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &scriptLW{noWL: true, lists: []listReply{{list: cmList("10", "", cm("a", "5"))}}}
		_, ctrl := NewInformer(lw, &corev1.ConfigMap{}, 0, ResourceEventHandlerDetailedFuncs{
			AddFunc: func(interface{}, bool) { panic("handler bug") },
		})
		if got := runRecovering(ctrl.RunWithContext); got != "handler bug" {
			t.Fatalf("Run panicked with %v, want the handler's panic", got)
		}
	})
}

// The same for a shared informer, whose processing loop panics when an
// index function does.
func TestSharedInformerPanicLeavesRunAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &scriptLW{noWL: true, lists: []listReply{{list: cmList("10", "", cm("a", "5"))}}}
		inf := NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, Indexers{
			"broken": func(interface{}) ([]string, error) { panic("index bug") },
		})
		if _, err := inf.AddEventHandler(ResourceEventHandlerFuncs{}); err != nil {
			t.Fatal(err)
		}
		if got := runRecovering(inf.RunWithContext); got != "index bug" {
			t.Fatalf("Run panicked with %v, want the index function's panic", got)
		}
		if !inf.IsStopped() {
			t.Error("the informer does not say it stopped")
		}
	})
}

// withoutReallyCrash turns utilruntime.ReallyCrash off for the test, so
// that a handler's panic is logged and the handler goes on.
func withoutReallyCrash(t *testing.T) {
	old := utilruntime.ReallyCrash
	utilruntime.ReallyCrash = false
	t.Cleanup(func() { utilruntime.ReallyCrash = old })
}

// After a handler panics, client-go pauses that handler for a second
// before its next notification, so that a handler failing on every event
// does not spin; ours too. Stopping the informer does not wait for the
// pause to end.
func TestInformerHandlerPausesASecondAfterAPanic(t *testing.T) {
	withoutReallyCrash(t)
	synctest.Test(t, func(t *testing.T) {
		lw, inf := abcInformer()
		start := time.Now()
		var mu sync.Mutex
		var calls []string
		h := ResourceEventHandlerFuncs{AddFunc: func(obj interface{}) {
			mu.Lock()
			calls = append(calls, fmt.Sprintf("%s@%v", obj.(*corev1.ConfigMap).Name, time.Since(start)))
			mu.Unlock()
			panic("handler bug")
		}}
		if _, err := inf.AddEventHandlerWithOptions(h, HandlerOptions{Logger: ptr.To(logr.Discard())}); err != nil {
			t.Fatal(err)
		}
		stop := runInformer(t, inf)
		time.Sleep(5 * time.Second)
		lw.current(t).Add(cm("d", "11"))
		synctest.Wait() // d waits out its pause
		stopped := time.Now()
		stop()
		if d := time.Since(stopped); d != 0 {
			t.Errorf("stopping took %v: it waited for the pause", d)
		}
		mu.Lock()
		defer mu.Unlock()
		if got := strings.Join(calls, " "); got != "a@0s b@1s c@2s" {
			t.Errorf("calls %s, want one a second after each panic", got)
		}
	})
}

// The panic's log line is client-go's, as its tests expect it, with the
// logger's name if it has one and no key of ours before the panic; the
// handler's name is in a line of its own.
func TestInformerHandlerPanicLogLine(t *testing.T) {
	withoutReallyCrash(t)
	for _, named := range []bool{false, true} {
		t.Run(fmt.Sprint("named ", named), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var out syncBuffer
				logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&out)))
				want := `"Observed a panic" panic="handler bug"`
				if named {
					logger = klog.LoggerWithName(logger, "my-handler")
					want = `"Observed a panic" logger="my-handler" panic="handler bug"`
				}
				_, inf := abcInformer()
				_, _, line, _ := goruntime.Caller(0)
				h := ResourceEventHandlerFuncs{AddFunc: func(interface{}) {
					panic("handler bug") // line+2
				}}
				reg, err := inf.AddEventHandlerWithOptions(h, HandlerOptions{Logger: &logger})
				if err != nil {
					t.Fatal(err)
				}
				stop := runInformer(t, inf)
				synctest.Wait()
				stop()
				got := out.String()
				if at := fmt.Sprintf("informer_panic_test.go:%d] %s", line+2, want); !strings.Contains(got, at) {
					t.Errorf("log lacks %s:\n%s", at, got)
				}
				if name := fmt.Sprintf("handler=%q", reg.(*listener).name); !strings.Contains(got, name) {
					t.Errorf("log lacks the handler's name (%s):\n%s", name, got)
				}
			})
		})
	}
}

// syncBuffer is a bytes.Buffer that goroutines may share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
