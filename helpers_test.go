package cache

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// startReflector runs r in its own goroutine until stop is called or the
// test ends (see startRun).
func startReflector(t testing.TB, r *Reflector) (ctx context.Context, stop func()) {
	t.Helper()
	return startRun(t, r.RunWithContext)
}

// runUntilDrained runs r (see startReflector) until lw's script has run
// dry (lw.drained, so lw must come from newScript) and everything in the
// synctest bubble has settled, then stops it.
func runUntilDrained(t *testing.T, r *Reflector, lw *scriptLW) {
	t.Helper()
	_, stop := startReflector(t, r)
	<-lw.drained
	synctest.Wait()
	stop()
}

// runFor runs r (see startReflector) for d of synctest time, then stops
// it: stopped, r has returned.
func runFor(t testing.TB, r *Reflector, d time.Duration) {
	t.Helper()
	_, stop := startReflector(t, r)
	time.Sleep(d)
	stop()
}

// runInformer runs inf the same way and returns its stop.
func runInformer(t testing.TB, inf SharedIndexInformer) (stop func()) {
	t.Helper()
	_, stop = startRun(t, inf.RunWithContext)
	return stop
}

// startRun is startRunIn with the test's context as the parent.
func startRun(t testing.TB, run func(context.Context)) (ctx context.Context, stop func()) {
	t.Helper()
	return startRunIn(t, t.Context(), run)
}

// startRunIn is the tests' one runner: run in its own goroutine, with a
// context derived from parent, until stop is called or the test ends
// (through t.Cleanup, so inside a synctest bubble too). ctx is the run's
// context, ended by stop. stop returns once run has returned; calling it
// again does nothing.
func startRunIn(t testing.TB, parent context.Context, run func(context.Context)) (ctx context.Context, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(ctx)
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

// healthLog records each health change as "State/Reason@seconds", the
// seconds counted in synctest time from the Reflector's start.
type healthLog struct {
	mu      sync.Mutex
	start   time.Time
	changes []string
	last    Health
}

// recorded returns the changes recorded so far.
func (l *healthLog) recorded() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.changes)
}

func (l *healthLog) record(h Health) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.changes = append(l.changes, fmt.Sprintf("%v/%s@%v", h.State, h.Reason, h.Since.Sub(l.start).Round(100*time.Millisecond)))
	l.last = h
}
