package cache

import (
	"context"
	"math"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kreflector/cache/internal/listhint"
	"github.com/kreflector/cache/internal/listwatch"
	"github.com/kreflector/cache/internal/repr"
)

// watching is a cycle's watch, from its request until it ends: the watch
// itself and what is known of it. The cycle holds it; while a stream runs
// the stream alone writes it (its last sign of life). The zero value is no
// watch.
type watching struct {
	// w is the open watch; nil before it opens and after it ends.
	w watch.Interface
	// mode is the mode its stream starts in: modeSynthetic if it started
	// at RV "" or "0" (it opens with synthetic ADDED events), modeLive
	// otherwise, modeGathering for a WatchList's initial events.
	mode streamMode
	// timeout is the timeout, in seconds, it was requested with: the
	// server should end it that long after requested (0: no timeout).
	timeout int32
	// requested is when it was requested, on the Reflector's clock (for
	// the very-short-watch rule and its timeout); for a WatchList's watch
	// going on after its sync, when the sync's Replace was done.
	requested time.Time
	// opened and lastSign are on the real clock: when it opened, and its
	// last sign of life (its open, its last event or bookmark, or an
	// answer to a quiet check).
	opened, lastSign time.Time
	// leaned says its objects arrive with the intake's lean steps done:
	// the ListWatch ran them where it decoded the objects (see
	// intake.watchItem).
	leaned bool
}

// request starts a watching of a watch requested with opts at now (on the
// Reflector's clock), whose stream starts in mode.
func request(opts metav1.ListOptions, mode streamMode, now time.Time) watching {
	wg := watching{mode: mode, requested: now}
	if t := opts.TimeoutSeconds; t != nil && *t > 0 && *t <= math.MaxInt32 {
		wg.timeout = int32(*t)
	}
	return wg
}

// open records that the watch w opened at now (real clock).
func (wg *watching) open(w watch.Interface, now time.Time) {
	wg.w, wg.opened, wg.lastSign = w, now, now
}

// stop stops the open watch, if any; the watching is kept (its last sign
// of life dates a silent death).
func (wg *watching) stop() {
	if wg.w != nil {
		wg.w.Stop()
		wg.w = nil
	}
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
	mode := modeLive
	if opts.ResourceVersion == "" || opts.ResourceVersion == "0" {
		mode = modeSynthetic
	}
	c.watch = request(opts, mode, c.r.clock.Now())
	c.r.live.calling(realClock.Now())
	w, err, ok := c.startWatch(ctx, opts)
	switch {
	case !ok:
		return phaseDone
	case err == nil:
		c.watch.open(w, realClock.Now())
		c.r.stats.watchOpened()
		c.r.live.opened()
		return phaseStream
	}
	o := classify(atWatchOpen, err, facts{})
	c.apply(o, opts.ResourceVersion, err)
	if o.next == stepBackoffRewatch {
		return c.backoffThen(ctx, phaseWatch, c.r.delayFor(o.retryAfter))
	}
	// Returned as the ListerWatcher gave it, as client-go does, so a
	// handler may compare it (err == io.EOF) or type-assert it.
	c.err = err
	return phaseDone
}

// startWatch opens a watch in its own goroutine, running due resyncs while
// it waits. ok is false when ctx ended (or a resync failed) first. A
// ListerWatcher that answers with neither a watch (nil, or a nil pointer)
// nor an error has failed to open one: err is errNilWatch, classified as
// any other error opening a watch or a WatchList. The call's context
// carries a hint of its own (the contract internal/listhint states): the
// lean steps to run on each object where the watch decodes it.
func (c *cycle) startWatch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error, bool) {
	wctx, hint := listhint.With(ctx, c.r.in.watchItem(c.watch.mode), c.r.in.dropsManagedFields())
	defer hint.Close()
	if f := c.watchHeld(); f != nil {
		hint.OfferHeld(f)
	}
	call := startCall(func() (watch.Interface, error) {
		w, err := c.r.lw.WatchWithContext(wctx, opts)
		if err == nil && repr.IsNil(w) {
			return nil, errNilWatch
		}
		return w, err
	}, func(w watch.Interface) { w.Stop() })
	o, _, why := await(ctx, &c.r.live, c, call.done)
	if why != wakeValue {
		call.giveUp()
		return nil, nil, false
	}
	w, err := o.result()
	c.watch.leaned = err == nil && hint.WatchItemized()
	return w, err, true
}

// watchHeld is the lookup offered to the watch call of a WatchList, on
// a LIST's terms (see pager.heldFunc): held objects are reused and the
// Reflector's ListWatch is our own, seen directly; sharded, it answers
// only for held objects in the shard (shardSpec.heldIn). Its initial
// ADDED events that the store holds at their resourceVersion are then
// not decoded (see listhint.Standin). nil for any other watch, and while
// a merged reshard's catch-up drops events.
func (c *cycle) watchHeld() listhint.HeldFunc {
	if !c.watch.mode.gathering() || !c.r.in.reusing() || c.catchUp != nil || !listwatch.Direct(c.r.lw) {
		return nil
	}
	if c.shard != nil {
		return c.shard.heldIn(c.r.in.heldByName())
	}
	return c.r.in.heldByName()
}

// stream runs phaseStream, then carries out what the way the watch ended
// means (see classify) and follows its next step.
func (c *cycle) stream(ctx context.Context) phase {
	s := c.streamerFor(&c.watch)
	startRV := c.r.pos.watchRV()
	_, err := s.run(ctx)
	c.watch.stop()
	if err == errStopRequested || err == errCycleEnded {
		// Not a watch failure: nothing to count, classify or learn from
		// (a failed resync was carried out where it failed).
		return phaseDone
	}
	o := classify(atWatchStream, err, c.streamFacts(err, s.events))
	c.apply(o, startRV, err)
	switch o.next {
	case stepRewatch:
		return phaseWatch
	case stepBackoffRewatch:
		return c.backoffThen(ctx, phaseWatch, c.r.delayFor(o.retryAfter))
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
	real := realClock.Now()
	lived := real.Sub(c.watch.opened)
	if err == nil && lived >= c.r.live.grace {
		c.r.live.worked(real)
	}
	return facts{
		internalRetry: apierrors.IsInternalError(err) && c.internal.allows(now),
		delivered:     events > 0,
		pace:          c.r.paceInternalErrors,
		empty:         err == nil && events == 0 && lived < c.r.live.grace,
	}
}
