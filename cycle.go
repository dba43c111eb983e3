package cache

import (
	"context"
	"time"

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
	// phaseReshard merges a changed shard into the store (reshard_merge.go)
	// and moves on to phaseWatch, or falls back to phaseList.
	phaseReshard
	phaseDone
)

// cycle is one ListAndWatch run. It owns the open watch and the resync
// timer; the Reflector owns what outlives cycles (resume position, backoff).
type cycle struct {
	r      *Reflector
	logger klog.Logger
	// watch is the cycle's watch: requested, open, or (watch.w nil) none.
	watch watching
	// incomplete counts this cycle's WatchLists that the server closed
	// before their initial-events-end bookmark.
	incomplete uint8
	internal   retryWindow
	resync     *resyncTimer
	// shard is what a sharded Reflector's requests select and its
	// responses are checked against in this cycle; nil when unsharded.
	shard *shardSpec
	// catchUp, after a merged reshard, drops the events its LIST covered.
	catchUp *catchUp
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
func (c *cycle) selector() string { return c.shard.selectorOrNone() }

// selectorOrNone is spec's selector, "" for nil (unsharded).
func (spec *shardSpec) selectorOrNone() string {
	if spec == nil {
		return ""
	}
	return spec.selector
}

// run runs the cycle's phases until one ends it or ctx ends, or a request
// to relist does (see relistRequests), which it then carries out.
func (c *cycle) run(ctx context.Context) error {
	defer c.close()
	cctx := c.r.relists.begin(ctx)
	p := c.firstSync()
	if c.r.pendingReshard {
		p = phaseReshard
	}
	for p != phaseDone && cctx.Err() == nil {
		p = c.step(cctx, p)
	}
	c.relistIfAsked(ctx, cctx.Err() != nil)
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
	case phaseReshard:
		return c.reshard(ctx)
	}
	return phaseDone
}

func (c *cycle) close() {
	c.watch.stop()
	c.resync.stop()
	c.r.live.cycleEnded(realClock.Now())
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
	if c.shard != nil {
		r.storeShard = c.shard.shard
	}
	if r.in != nil {
		r.in.synced(items)
	}
	r.live.synced(realClock.Now())
}

// resyncNow runs a due resync. A store error is carried out here, the one
// place a failed resync is (classify's atResync), and ends the cycle: false.
func (c *cycle) resyncNow() bool {
	c.logger.V(4).Info("Forcing resync", "reflector", c.r.name)
	if err := c.resync.fire(c.r.store, c.r.ShouldResync); err != nil {
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
	if _, _, why := await(ctx, &c.r.live, c, never, t.C()); why != 0 {
		return phaseDone
	}
	return next
}
