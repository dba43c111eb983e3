package cache

import (
	"context"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
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
		lw := &stepLW{noWL: true, lists: []listReply{{list: cmList("10", "", cm("a", "5"))}}}
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
		lw := &stepLW{noWL: true, lists: []listReply{{list: cmList("10", "", cm("a", "5"))}}}
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
