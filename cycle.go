package cache

import (
	"context"
	"math"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
)

// phase is a state of one ListAndWatch cycle. Each phase's method does its
// work and names the phase that follows; the cycle ends in phaseDone.
type phase uint8

const (
	// phaseWatchList streams the initial state as one WatchList. It moves
	// on to phaseStream (same watch) once the initial-events-end bookmark
	// is applied, or to phaseList when the server refuses.
	phaseWatchList phase = iota
	// phaseList LISTs (paginated) and Replaces the store, then moves on to
	// phaseWatch. A LIST at a resourceVersion the server cannot serve is
	// made again at the latest; any other failure ends the cycle with the
	// error.
	phaseList
	// phaseWatch opens a WATCH at the resume position and moves on to
	// phaseStream; throttling or a refused connection backs off and stays.
	phaseWatch
	// phaseStream applies events until the watch ends; then phaseWatch
	// resumes, or the cycle ends so that the next one relists.
	phaseStream
	phaseDone
)

// cycle is one ListAndWatch run. It owns the open watch and the resync
// timer; the Reflector owns what outlives cycles (resume position, backoff).
type cycle struct {
	r      *Reflector
	logger klog.Logger
	// w is the open watch, if any; stream consumes it.
	w watch.Interface
	// wStart is when w was requested (for the very-short-watch rule), or,
	// for a WatchList's watch, when its initial events were Replaced.
	wStart time.Time
	// wMode is the mode w's stream starts in: modeSynthetic if w started at
	// RV "" or "0" (it opens with synthetic ADDED events), else modeLive.
	wMode streamMode
	// incomplete counts this cycle's WatchLists that the server closed
	// before their initial-events-end bookmark.
	incomplete uint8
	// wTimeout is the timeout, in seconds, w was requested with: the server
	// should end w that long after wStart (0: no timeout). The small fields
	// are kept together so that a cycle stays in its allocation size class.
	wTimeout int32
	internal retryWindow
	resync   *resyncTimer
	// shard is what a sharded Reflector's requests select and its
	// responses are checked against in this cycle; nil when unsharded.
	shard *shardSpec
	// err is what ListAndWatch returns.
	err error
	// retryAfter is the delay the server asked for with its last failure,
	// which Run waits at least before the next cycle.
	retryAfter time.Duration
}

func newCycle(ctx context.Context, r *Reflector) *cycle {
	return &cycle{
		r:        r,
		logger:   r.loggerFor(ctx),
		internal: retryWindow{max: r.MaxInternalErrorRetryDuration, quiet: time.Minute},
		shard:    r.shards.current(),
	}
}

// selector is the ShardSelector of the cycle's requests ("" unsharded).
func (c *cycle) selector() string {
	if c.shard == nil {
		return ""
	}
	return c.shard.selector
}

func (c *cycle) run(ctx context.Context) error {
	defer c.close()
	p := phaseList
	if c.r.server.wantsWatchList(c.r.clock.Now()) {
		p = phaseWatchList
	}
	for p != phaseDone {
		if ctx.Err() != nil {
			return c.err
		}
		p = c.step(ctx, p)
	}
	return c.err
}

func (c *cycle) step(ctx context.Context, p phase) phase {
	switch p {
	case phaseWatchList:
		return c.watchList(ctx)
	case phaseList:
		return c.list(ctx)
	case phaseWatch:
		return c.openWatch(ctx)
	case phaseStream:
		return c.stream(ctx)
	}
	return phaseDone
}

func (c *cycle) close() {
	c.stopWatch()
	c.resync.stop()
	c.r.live.cycleEnded(realClock.Now())
}

func (c *cycle) stopWatch() {
	if c.w != nil {
		c.w.Stop()
		c.w = nil
	}
}

// synced is called once the store holds the server's state at rv, from a
// sync of items objects that began at start: the watch phases begin and
// with them the resync timer.
func (c *cycle) synced(rv string, items int, start time.Time) {
	r := c.r
	now := r.clock.Now()
	c.logger.V(2).Info("Caches populated", "type", r.typeDescription, "reflector", r.name)
	r.pos.synced(rv)
	r.stats.resourceVersion(rv)
	r.stats.synced(items, now.Sub(start), now)
	// Unless a failure says otherwise (see cycle.apply), the next sync
	// follows an error.
	r.listCause = ListWatchError
	c.resync = startResync(r.clock, r.resyncPeriod)
	r.shards.syncedWith(c.shard)
	if r.in != nil {
		r.in.filled = true
	}
	// The backoff is not reset here: a relist whose watch then fails at
	// once is a failure repeated, and must keep backing off.
	r.syncCompleted()
}

// watchTimeout draws a watch timeout from [min, 2*min), in whole seconds.
func (r *Reflector) watchTimeout() *int64 {
	min := r.minWatchTimeout.Seconds()
	s := int64(min + r.rand.Float64()*min)
	return &s
}

// openWatch runs phaseWatch.
func (c *cycle) openWatch(ctx context.Context) phase {
	opts := metav1.ListOptions{
		ResourceVersion:     c.r.pos.watchRV(),
		TimeoutSeconds:      c.r.watchTimeout(),
		AllowWatchBookmarks: true,
		ShardSelector:       c.selector(),
	}
	c.wMode = modeLive
	if opts.ResourceVersion == "" || opts.ResourceVersion == "0" {
		c.wMode = modeSynthetic
	}
	c.requested(opts)
	c.r.live.calling(c.wStart)
	w, err, ok := c.startWatch(ctx, opts)
	switch {
	case !ok:
		return phaseDone
	case err == nil:
		c.w = w
		c.r.stats.watchOpened()
		c.r.live.opened(realClock.Now())
		return phaseStream
	}
	o := classify(atWatchOpen, err, facts{})
	c.apply(o, opts.ResourceVersion, err)
	if o.next == stepBackoffRewatch {
		c.logger.V(4).Info("Watch failed - backing off", "reflector", c.r.name, "type", c.r.typeDescription, "err", err)
		return c.backoffThen(ctx, phaseWatch, c.r.backoffFor(o))
	}
	// Returned as the ListerWatcher gave it, as client-go does, so a
	// handler may compare it (err == io.EOF) or type-assert it; the
	// context goes to the log.
	c.logger.V(4).Info("Watch could not be opened", "reflector", c.r.name, "type", c.r.typeDescription, "resourceVersion", opts.ResourceVersion, "err", err)
	c.err = err
	return phaseDone
}

// requested notes that a watch with opts is being requested now.
func (c *cycle) requested(opts metav1.ListOptions) {
	c.wStart = c.r.clock.Now()
	c.wTimeout = 0
	if t := opts.TimeoutSeconds; t != nil && *t > 0 && *t <= math.MaxInt32 {
		c.wTimeout = int32(*t)
	}
}

// startWatch opens a watch in its own goroutine, running due resyncs while
// it waits. ok is false when ctx ended (or a resync failed) first.
func (c *cycle) startWatch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error, bool) {
	call := startCall(func() (watch.Interface, error) {
		return c.r.lw.WatchWithContext(ctx, opts)
	}, func(w watch.Interface) { w.Stop() })
	for {
		select {
		case <-ctx.Done():
			call.giveUp()
			return nil, nil, false
		case <-c.r.live.C():
			c.r.graceEnded()
		case <-c.resync.C():
			if !c.resyncNow() {
				call.giveUp()
				return nil, nil, false
			}
		case o := <-call.done:
			w, err := o.result()
			return w, err, true
		}
	}
}

// flowing is told that a watch delivered a burst of events: the server is
// reached, and a loss of touch ends.
func (c *cycle) flowing() {
	c.r.live.lastSign = realClock.Now()
	c.r.reachedServer()
	c.r.inTouch()
}

// The rest of streamOwner: what a stream of the cycle's learns or waits on.
func (c *cycle) sawBookmark()              { c.r.server.sawBookmark() }
func (c *cycle) resyncC() <-chan time.Time { return c.resync.C() }
func (c *cycle) resyncStore() error        { return c.resync.fire(c.r.store, c.r.ShouldResync) }
func (c *cycle) liveC() <-chan time.Time   { return c.r.live.C() }
func (c *cycle) graceEnded()               { c.r.graceEnded() }
func (c *cycle) log() klog.Logger          { return c.logger }
func (c *cycle) tooSoon(events int) bool {
	return events == 0 && c.r.clock.Since(c.wStart) < time.Second
}

// published publishes what a burst of events changed: the resume position
// and the stats.
func (c *cycle) published(b *eventBatch) {
	r := c.r
	r.pos.publish()
	if *b != (eventBatch{}) {
		r.stats.flush(b, r.pos.last, r.clock.Now())
	}
}

// resyncNow runs a due resync; false ends the cycle after a store error.
func (c *cycle) resyncNow() bool {
	c.logger.V(4).Info("Forcing resync", "reflector", c.r.name)
	if err := c.resync.fire(c.r.store, c.r.ShouldResync); err != nil {
		c.logger.Info("Warning: watch ended with error", "reflector", c.r.name, "type", c.r.typeDescription, "err", err)
		c.apply(classify(atResync, err, facts{}), c.r.pos.watchRV(), err)
		return false
	}
	return true
}

// backoffThen waits delay on the Reflector's clock (running due resyncs)
// and returns next, or phaseDone if ctx ended or a resync failed. A delay
// that is not positive arms no timer: next follows at once.
func (c *cycle) backoffThen(ctx context.Context, next phase, delay time.Duration) phase {
	if delay <= 0 {
		if ctx.Err() != nil {
			return phaseDone
		}
		return next
	}
	t := c.r.clock.NewTimer(delay)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return phaseDone
		case <-c.r.live.C():
			c.r.graceEnded()
		case <-c.resync.C():
			if !c.resyncNow() {
				return phaseDone
			}
		case <-t.C():
			return next
		}
	}
}

// stream runs phaseStream, then carries out what the way the watch ended
// means (see classify) and follows its next step.
func (c *cycle) stream(ctx context.Context) phase {
	s := c.streamerFor(c.w, c.wMode)
	startRV := c.r.pos.watchRV()
	_, err := s.run(ctx)
	c.stopWatch()
	if err == errStopRequested {
		// Not a watch failure: nothing to count, classify or learn from.
		return phaseDone
	}
	o := classify(atWatchStream, err, c.streamFacts(err, s.events))
	c.apply(o, startRV, err)
	c.logWatchEnd(o, err)
	switch o.next {
	case stepRewatch:
		return phaseWatch
	case stepBackoffRewatch:
		return c.backoffThen(ctx, phaseWatch, c.r.backoffFor(o))
	}
	return phaseDone
}

// streamFacts gathers what classify needs to know about the cycle's
// watch, which delivered events events and ended with err. A watch the
// server closed after it had been open the grace period showed that it
// worked, which ends a loss of touch before the end is classified (one
// that delivered something ended it when the data flowed).
func (c *cycle) streamFacts(err error, events int) facts {
	now := c.r.clock.Now()
	c.internal.observe(err, now)
	lived := c.r.live.openFor(realClock.Now())
	if err == nil && lived >= c.r.live.grace {
		// Closed by the server after the grace period: it worked (this
		// ends even a stall, which has no probation).
		c.r.inTouch()
	}
	return facts{
		internalRetry: apierrors.IsInternalError(err) && c.internal.allows(now),
		delivered:     events > 0,
		pace:          c.r.paceInternalErrors,
		empty:         err == nil && events == 0 && lived < c.r.live.grace,
	}
}

// logWatchEnd logs how the cycle's watch ended.
func (c *cycle) logWatchEnd(o outcome, err error) {
	r := c.r
	switch {
	case err == nil:
		// The streamer logged the close.
	case o.end == WatchExpired:
		c.logger.V(4).Info("Watch closed", "reflector", r.name, "type", r.typeDescription, "err", err)
	case o.end == WatchThrottled:
		c.logger.V(2).Info("Watch returned 429 - backing off", "reflector", r.name, "type", r.typeDescription)
	case o.end == WatchStalled:
		c.logger.Info("Watch stalled, re-watching", "reflector", r.name, "type", r.typeDescription, "window", r.stallWindow)
	case o.end == WatchInternalError && o.next == stepRewatch:
		c.logger.V(2).Info("Retrying watch after internal error", "reflector", r.name, "type", r.typeDescription, "err", err)
	default:
		c.logger.Info("Warning: watch ended with error", "reflector", r.name, "type", r.typeDescription, "err", err)
	}
}
