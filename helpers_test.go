package cache

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// startReflector runs r in its own goroutine until stop is called or the
// test ends (through t.Cleanup, so inside a synctest bubble too). ctx is
// the run's context, ended by stop. stop returns once RunWithContext has
// returned; calling it again does nothing.
func startReflector(t testing.TB, r *Reflector) (ctx context.Context, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
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

// timedLW stamps every call a scripted ListerWatcher receives with the
// (synctest) time it arrived at.
type timedLW struct {
	*scriptLW
	mu    sync.Mutex
	times []time.Time
	verbs []string
}

func (l *timedLW) stamp(verb string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.times = append(l.times, time.Now())
	l.verbs = append(l.verbs, verb)
}

func (l *timedLW) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	l.stamp("LIST")
	return l.scriptLW.ListWithContext(ctx, o)
}

func (l *timedLW) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	l.stamp("WATCH")
	return l.scriptLW.WatchWithContext(ctx, o)
}

func (l *timedLW) List(o metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), o)
}

func (l *timedLW) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), o)
}

// healthLog records each health change as "State/Reason@seconds", the
// seconds counted in synctest time from the Reflector's start.
type healthLog struct {
	mu      sync.Mutex
	start   time.Time
	changes []string
	last    Health
}

func (l *healthLog) record(h Health) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.changes = append(l.changes, fmt.Sprintf("%v/%s@%v", h.State, h.Reason, h.Since.Sub(l.start).Round(100*time.Millisecond)))
	l.last = h
}
