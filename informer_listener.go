package cache

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
)

// notifyKind says which handler method a notification calls.
type notifyKind uint8

const (
	notifyAdd notifyKind = iota
	notifyUpdate
	notifyDelete
	// notifySnapshot hands a SnapshotHandler the *Snapshot in obj.
	notifySnapshot
	// notifyBatch stands for the notifications of the *replaceBatch in
	// obj, made one at a time as the listener reaches them (see next).
	notifyBatch
)

// pauseAfterPanic is how long a handler that panicked (with
// utilruntime.ReallyCrash off) waits before its next call, as in
// client-go, so that a handler failing on every notification does not
// spin.
const pauseAfterPanic = time.Second

// notification is one handler call waiting in a listener's backlog. It is
// a plain struct, so queueing it boxes nothing.
type notification struct {
	kind    notifyKind
	initial bool
	// syncing, for a notifyBatch, says the listener's resync was due when
	// the batch was queued (see replaceBatch.memberOf).
	syncing  bool
	old, obj interface{}
}

// listener delivers notifications to one handler, in order, from one
// goroutine (run), buffering them in a backlog that starts empty and grows
// as needed, so that a slow handler delays only itself. A Replace's adds
// and updates take one entry (a replaceBatch). A backlog that grew past
// keptBacklog entries (a watch's burst) is given back to the GC once it
// drains, so it does not keep, for the informer's life, the room a burst
// needed. It is also the handler's ResourceEventHandlerRegistration.
type listener struct {
	handler ResourceEventHandler
	name    string
	// logger is the handler's (HandlerOptions.Logger), as given: the panic
	// log line is client-go's; onPanic adds one with the handler's name.
	logger  klog.Logger
	onPanic []func(context.Context, interface{})

	mu      sync.Mutex
	backlog []notification
	head    int
	// at is the place in the batch at the head of the backlog, if one is
	// (the next object to reach); batched is what the batches in the
	// backlog have still to tell, less one per batch (each counts one in
	// the backlog's length).
	at, batched int
	stopped     bool
	// wake holds a signal when the backlog may have grown or the listener
	// was stopped.
	wake chan struct{}
	// done is closed when run has returned (or, for a listener that never
	// ran, when it is removed); see ShutdownChan.
	done chan struct{}

	// syncing is guarded by the processor's lock: whether the listener
	// gets the resync notifications of the current resync.
	syncing bool
	sync    syncTracker
	resync  resyncClock

	// mostPending (guarded by mu) is the largest backlog seen.
	mostPending int
	// busySince is when the call in progress began (UnixNano), 0 if idle;
	// busyTotal and slowest are the time spent in calls and the longest
	// call, in nanoseconds (see callEnded).
	busySince, busyTotal, slowest atomic.Int64
	delivered                     atomic.Uint64
}

// newListener returns a listener for h with the given requested and
// effective resync periods; upstream names the informer and gives its
// last list/watch error.
func newListener(logger klog.Logger, h ResourceEventHandler, requested, effective time.Duration, now time.Time, upstream *syncTracker) *listener {
	name := handlerName(h)
	l := &listener{
		handler: h,
		name:    name,
		logger:  logger,
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		syncing: true,
	}
	l.onPanic = []func(context.Context, interface{}){l.logPanic}
	l.sync.init(func() string { return upstream.name() + " + event handler " + name }, upstream.cause, upstream.halted)
	l.resync.init(requested, effective, now)
	return l
}

// add queues n; it never blocks on the handler.
func (l *listener) add(n notification) {
	told := 1
	switch b, _ := n.obj.(*replaceBatch); {
	case n.kind == notifyAdd && n.initial:
		l.sync.start()
	case n.kind == notifyBatch:
		if told = b.told(n.syncing); b.initial {
			l.sync.startAll(b.adds)
		}
	}
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		abandonQueued(n, 0)
		return
	}
	l.batched += told - 1
	if l.head > 0 && len(l.backlog) == cap(l.backlog) && l.head >= len(l.backlog)/2 {
		n := copy(l.backlog, l.backlog[l.head:])
		clear(l.backlog[n:])
		l.backlog, l.head = l.backlog[:n], 0
	}
	l.backlog = append(l.backlog, n)
	l.mostPending = max(l.mostPending, len(l.backlog)-l.head+l.batched)
	l.mu.Unlock()
	l.signal()
}

// abandonQueued gives up n, a notification queued and not delivered: its
// handoffs, or for a batch, the listener's place in it from object at.
func abandonQueued(n notification, at int) {
	if n.kind == notifyBatch {
		n.obj.(*replaceBatch).leave(at, n.syncing)
		return
	}
	abandonAll(n)
}

func (l *listener) signal() { poke(l.wake) }

// stop ends run after the call in progress; the backlog is dropped (its
// handoffs abandoned).
func (l *listener) stop() {
	l.mu.Lock()
	l.stopped = true
	dropped, at := l.backlog[l.head:], l.at
	l.backlog, l.head, l.at, l.batched = nil, 0, 0, 0
	l.mu.Unlock()
	for i, n := range dropped {
		if i > 0 {
			at = 0
		}
		abandonQueued(n, at)
	}
	l.signal()
}

// next waits for the oldest queued notification (a batch's next one it
// tells the listener of); false once stopped.
func (l *listener) next() (notification, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		for len(l.backlog) == l.head && !l.stopped {
			l.mu.Unlock()
			<-l.wake
			l.mu.Lock()
		}
		if l.stopped {
			return notification{}, false
		}
		n := l.backlog[l.head]
		if n.kind != notifyBatch {
			l.pop()
			return n, true
		}
		if item, ok := l.fromBatch(n); ok {
			return item, true
		}
	}
}

// fromBatch moves the listener's place in n, the batch at the head of
// the backlog, on by one object, and returns its notification, if the
// listener is told of it. l.mu is held.
func (l *listener) fromBatch(n notification) (notification, bool) {
	b := n.obj.(*replaceBatch)
	var item notification
	ok := false
	if l.at < len(b.objs) {
		item, ok = b.item(l.at, n.syncing)
		l.at++
	}
	if ok {
		l.batched--
	}
	if l.at == len(b.objs) {
		l.at = 0
		l.batched++ // the batch's own count goes with it
		l.pop()
	}
	return item, ok
}

// pop takes the head of the backlog off. l.mu is held.
func (l *listener) pop() {
	l.backlog[l.head] = notification{}
	l.head++
	if l.head == len(l.backlog) {
		l.drained()
	}
}

// keptBacklog is the capacity, in notifications (40 bytes each), a
// drained backlog keeps for reuse; a larger one is dropped.
const keptBacklog = 256

// drained empties the backlog, all of it delivered, keeping its buffer
// only if it is small: steady traffic reuses it, while the room a burst
// grew it to goes back to the GC.
func (l *listener) drained() {
	l.head = 0
	if cap(l.backlog) > keptBacklog {
		l.backlog = nil
		return
	}
	l.backlog = l.backlog[:0]
}

// pending is the number of queued notifications (a batch counts what it
// has still to tell).
func (l *listener) pending() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.backlog) - l.head + l.batched
}

// run delivers notifications until the listener is stopped, writing the
// handler's metrics to p (nil for none) under the informer's name. After
// a call that panicked, the next waits pauseAfterPanic (as in client-go,
// where the pause also comes once the next notification is there); a
// stop ends the pause at once.
func (l *listener) run(p ReflectorMetricsProvider, informer string) {
	defer close(l.done)
	m := openHandlerMetrics(p, informer, l.name)
	defer m.close()
	panicked := false
	for {
		n, ok := l.next()
		if !ok {
			return
		}
		if panicked && !l.pause(pauseAfterPanic) {
			abandonAll(n) // stopped while pausing: n is not delivered
			return
		}
		if m.provided == nil {
			panicked = !l.deliver(n)
			continue
		}
		start := time.Now()
		panicked = !l.deliver(n)
		m.called(time.Since(start), l.pending())
	}
}

// pause waits d, or until the listener is stopped (false). Notifications
// queued meanwhile stay in the backlog.
func (l *listener) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return true
		case <-l.wake:
			// An add, or a stop; next looks at the backlog itself, so the
			// signal is not missed.
			l.mu.Lock()
			stopped := l.stopped
			l.mu.Unlock()
			if stopped {
				return false
			}
		}
	}
}

// deliver makes one handler call and reports whether it returned. A panic
// gets utilruntime.HandleCrash's treatment (the process crashes unless
// utilruntime.ReallyCrash is off), logged as client-go logs it, and in a
// second line with the handler's name (logPanic); if the process
// survives, the notification is skipped and delivery goes on.
func (l *listener) deliver(n notification) (returned bool) {
	start := time.Now()
	l.busySince.Store(start.UnixNano())
	defer l.callEnded(start)
	defer utilruntime.HandleCrashWithLogger(l.logger, l.onPanic...)
	if n.kind != notifySnapshot {
		// A compact store's records are decoded now, on the handler's
		// goroutine (see resolveCompact).
		n.old, n.obj = resolveCompact(n.old), resolveCompact(n.obj)
		if key, bad := undecodable(n.old, n.obj); bad {
			l.logger.Error(nil, "A compact store's record does not decode: its notification is not delivered", "handler", l.name, "key", key)
			return true
		}
	}
	switch n.kind {
	case notifyAdd:
		l.handler.OnAdd(n.obj, n.initial)
		if n.initial {
			l.sync.finish()
		}
	case notifyUpdate:
		l.handler.OnUpdate(n.old, n.obj)
	case notifyDelete:
		l.handler.OnDelete(n.obj)
	case notifySnapshot:
		l.handler.(SnapshotHandler).OnSnapshot(*n.obj.(*Snapshot))
	}
	return true
}

// logPanic names the handler whose panic utilruntime.HandleCrash has just
// logged.
func (l *listener) logPanic(context.Context, interface{}) {
	l.logger.Error(nil, "Event handler panicked", "handler", l.name)
}

// HasSynced reports whether the informer has synced and the handler has
// returned from every OnAdd of the initial list.
func (l *listener) HasSynced() bool { return l.sync.done() }

// HasSyncedChecker is a DoneChecker for HasSynced.
func (l *listener) HasSyncedChecker() DoneChecker { return &l.sync }

// WaitForSync blocks until HasSynced (nil), ctx ends, or the informer
// has stopped; the error then wraps ErrNotSynced, ctx's error (or
// ErrStopped) and the informer's last list/watch error. A handler still
// taking its initial adds when the informer stops never syncs (its
// backlog is dropped), so that returns at once too.
func (l *listener) WaitForSync(ctx context.Context) error { return l.sync.wait(ctx) }

// ShutdownChan is closed once the handler will be called no more after
// its removal (or the informer's stop). client-go's ShutDownEventHandler
// waits on it.
func (l *listener) ShutdownChan() <-chan struct{} { return l.done }

// handlerName names a handler for logs: the package of the functions of a
// ResourceEventHandlerFuncs (or their names if they come from several
// places), otherwise the handler's type with its package path.
func handlerName(h ResourceEventHandler) string {
	switch f := h.(type) {
	case ResourceEventHandlerFuncs:
		return funcsName(f.AddFunc, f.UpdateFunc, f.DeleteFunc)
	case *ResourceEventHandlerFuncs:
		return funcsName(f.AddFunc, f.UpdateFunc, f.DeleteFunc)
	case ResourceEventHandlerDetailedFuncs:
		return funcsName(f.AddFunc, f.UpdateFunc, f.DeleteFunc)
	}
	t := reflect.TypeOf(h)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.PkgPath() == "" || t.Name() == "" {
		return fmt.Sprintf("%T", h)
	}
	return t.PkgPath() + "." + t.Name()
}

// funcsName is the common qualifier of the non-nil functions' names (the
// part before the last dot), or their names joined with "+".
func funcsName(fns ...any) string {
	var names []string
	common := ""
	for _, fn := range fns {
		v := reflect.ValueOf(fn)
		if !v.IsValid() || v.IsNil() {
			continue
		}
		f := runtime.FuncForPC(v.Pointer())
		if f == nil {
			continue
		}
		name := f.Name()
		names = append(names, name)
		q := name
		if i := strings.LastIndexByte(name, '.'); i > 0 {
			q = name[:i]
		}
		if common == "" || common == q {
			common = q
		} else {
			common = "\x00"
		}
	}
	switch common {
	case "":
		return "<no functions>"
	case "\x00":
		return strings.Join(names, "+")
	}
	return common
}
