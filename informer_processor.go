package cache

import (
	"context"
	goruntime "runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
)

// minimumResyncPeriod is the shortest resync period a handler gets.
const minimumResyncPeriod = time.Second

// processor holds an informer's listeners and fans notifications out to
// them, in registration order.
type processor struct {
	// metrics and name are set before start: where the listeners write
	// their metrics, and under which informer name.
	metrics ReflectorMetricsProvider
	name    string

	// warm, if set (before start), decodes a compact store's handoffs
	// ahead of the listeners.
	warm *warmer

	mu        sync.RWMutex
	listeners []*listener
	started   bool
	wg        sync.WaitGroup
}

// add registers l, starting it if the processor runs.
func (p *processor) add(l *listener) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.listeners = append(p.listeners, l)
	if p.started {
		p.wg.Go(func() { l.run(p.metrics, p.name) })
	}
}

// remove unregisters l and stops it; unknown listeners are ignored.
func (p *processor) remove(l *listener) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := slices.Index(p.listeners, l)
	if i < 0 {
		return
	}
	p.listeners = slices.Delete(p.listeners, i, i+1)
	if p.started {
		l.stop()
	} else {
		l.stop() // drops the backlog; run never started
		close(l.done)
	}
}

// start starts every registered listener; they write their metrics to
// metrics (nil: none) under the informer's name.
func (p *processor) start(metrics ReflectorMetricsProvider, name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.metrics, p.name = metrics, name
	p.started = true
	for _, l := range p.listeners {
		p.wg.Go(func() { l.run(p.metrics, p.name) })
	}
	if p.warm != nil {
		for range goruntime.GOMAXPROCS(0) {
			p.wg.Go(p.warm.run)
		}
	}
}

// stop stops every listener, forgets them, and waits until each has
// returned from its handler call in progress.
func (p *processor) stop() {
	p.mu.Lock()
	for _, l := range p.listeners {
		l.stop()
	}
	p.listeners = nil
	if p.warm != nil {
		p.warm.stop()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// distribute queues n to every listener, or, for a resync notification,
// to the listeners whose resync is due.
// A compact store's records go as handoffs, so that the listeners share
// the decoded objects, and to the warmer, which decodes them ahead.
func (p *processor) distribute(n notification, resync bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	k := 0
	for _, l := range p.listeners {
		if !resync || l.syncing {
			k++
		}
	}
	if k == 0 {
		return
	}
	n = handOffAll(n, k)
	for _, l := range p.listeners {
		if !resync || l.syncing {
			l.add(n)
		}
	}
	p.warm.add(n)
}

// distributeBatch queues b to every listener, each one's entry saying
// whether its resync is due (see replaceBatch), and to the warmer.
func (p *processor) distributeBatch(b *replaceBatch) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	syncing := 0
	for _, l := range p.listeners {
		if l.syncing {
			syncing++
		}
	}
	if len(p.listeners) == 0 {
		return
	}
	b.listeners(len(p.listeners), syncing)
	for _, l := range p.listeners {
		l.add(notification{kind: notifyBatch, obj: b, syncing: l.syncing})
	}
	p.warm.addBatch(b)
}

// upstreamSynced tells every listener that the informer has synced.
func (p *processor) upstreamSynced() {
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, l := range p.listeners {
		l.sync.upstreamSynced()
	}
}

// shouldResync marks which listeners' resyncs are due at now, schedules
// their next, and reports whether any is due. Until its first call every
// listener counts as due (so a relist's unchanged objects reach all
// handlers, as in client-go).
func (p *processor) shouldResync(now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	due := false
	for _, l := range p.listeners {
		l.syncing = l.resync.due(now)
		if l.syncing {
			due = true
			l.resync.advance(now)
		}
	}
	return due
}

// resyncCheckPeriodChanged adjusts every listener to a new check period.
func (p *processor) resyncCheckPeriodChanged(logger klog.Logger, check time.Duration) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, l := range p.listeners {
		l.resync.setPeriod(effectiveResyncPeriod(logger, l.resync.requested, check))
	}
}

// effectiveResyncPeriod is the period a handler asking for desired gets
// from an informer checking every check: none if the informer does not
// resync, at least check otherwise.
func effectiveResyncPeriod(logger klog.Logger, desired, check time.Duration) time.Duration {
	switch {
	case desired == 0:
		return 0
	case check == 0:
		logger.Info("Warning: the specified resyncPeriod is invalid because this shared informer doesn't support resyncing", "desired", desired)
		return 0
	case desired < check:
		logger.Info("Warning: the specified resyncPeriod is being increased to the minimum resyncCheckPeriod", "desired", desired, "resyncCheckPeriod", check)
		return check
	}
	return desired
}

// resyncClock is a listener's resync schedule.
type resyncClock struct {
	mu sync.Mutex
	// requested is the period asked for (after the minimum was applied);
	// period is the one in force (0: no resyncs).
	requested, period time.Duration
	next              time.Time
}

func (r *resyncClock) init(requested, period time.Duration, now time.Time) {
	r.requested, r.period, r.next = requested, period, now.Add(period)
}

func (r *resyncClock) due(now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.period != 0 && !now.Before(r.next)
}

func (r *resyncClock) advance(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next = now.Add(r.period)
}

func (r *resyncClock) setPeriod(p time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.period = p
}

// syncTracker tells when a listener has synced: the informer has synced
// and every initial-list OnAdd queued to the listener has returned. It is
// the listener's DoneChecker.
type syncTracker struct {
	// name names what is waited for; cause says why it is not done yet
	// (the Reflector's syncCause: its last list/watch error, a WatchList
	// streaming), nil if nothing is known.
	name  func() string
	cause func() error
	// halted is closed when the informer has stopped: if not done by
	// then, it never will be.
	halted   <-chan struct{}
	pending  atomic.Int64
	upstream atomic.Bool
	ch       chan struct{}
	once     sync.Once
}

func (t *syncTracker) init(name func() string, cause func() error, halted <-chan struct{}) {
	t.name, t.cause, t.halted, t.ch = name, cause, halted, make(chan struct{})
}

func (t *syncTracker) start() { t.pending.Add(1) }

// startAll is start for n initial adds at once.
func (t *syncTracker) startAll(n int) { t.pending.Add(int64(n)) }

func (t *syncTracker) finish() {
	if t.pending.Add(-1) == 0 && t.upstream.Load() {
		t.close()
	}
}

func (t *syncTracker) upstreamSynced() {
	t.upstream.Store(true)
	if t.pending.Load() == 0 {
		t.close()
	}
}

func (t *syncTracker) close() { t.once.Do(func() { close(t.ch) }) }

func (t *syncTracker) done() bool {
	select {
	case <-t.ch:
		return true
	default:
		return false
	}
}

// Name names what is waited for; while not done it carries the informer's
// last list/watch error, if any, and says when a WatchList is streaming.
func (t *syncTracker) Name() string {
	if err := t.cause(); err != nil && !t.done() {
		return t.name() + " (" + err.Error() + ")"
	}
	return t.name()
}

// Done is closed once synced.
func (t *syncTracker) Done() <-chan struct{} { return t.ch }

// wait blocks until synced (nil), ctx ends, or the informer has stopped:
// the error then names what was waited for and wraps ErrNotSynced, ctx's
// error (or ErrStopped) and the informer's last list/watch error (set
// from the first failure on), so that apierrors.IsForbidden(err) tells
// missing RBAC rights from a slow server; it also says when a WatchList
// is streaming.
func (t *syncTracker) wait(ctx context.Context) error {
	select {
	case <-t.ch:
		return nil
	case <-t.halted:
	case <-ctx.Done():
	}
	if t.done() {
		return nil
	}
	// Stopped says more than an ended ctx, and for good.
	why := ctx.Err()
	select {
	case <-t.halted:
		why = ErrStopped
	default:
	}
	return notSyncedError(t.name(), why, t.cause())
}
