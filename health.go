package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// HealthState is the coarse state of a Reflector.
type HealthState int

const (
	// Syncing: the store has not yet been filled from the server.
	Syncing HealthState = iota
	// Synced: the store is known to be current (see Health).
	Synced
	// Degraded: the Reflector cannot keep the store current; Reason says
	// why (see Health).
	Degraded
	// Stopped: Run has returned (the Reflector's, or the informer's), so
	// nothing keeps the store current any more; HasSynced and LastError
	// say how far it got. WaitForSync and WaitForShard then return at once
	// with an error wrapping ErrStopped. A Reflector run again leaves it
	// (Syncing until its next sync).
	Stopped
)

func (s HealthState) String() string {
	switch s {
	case Syncing:
		return "Syncing"
	case Synced:
		return "Synced"
	case Degraded:
		return "Degraded"
	case Stopped:
		return "Stopped"
	}
	return fmt.Sprintf("HealthState(%d)", int(s))
}

// DegradedReason classifies why a Reflector is Degraded.
type DegradedReason string

const (
	ReasonNone DegradedReason = ""
	// ReasonForbidden: a call was refused with 401 or 403.
	ReasonForbidden DegradedReason = "Forbidden"
	// ReasonNotFound: the resource is not served (404).
	ReasonNotFound DegradedReason = "NotFound"
	// ReasonThrottled: calls kept getting 429 for the grace period.
	ReasonThrottled DegradedReason = "Throttled"
	// ReasonUnreachable: connections kept being refused for the grace
	// period.
	ReasonUnreachable DegradedReason = "Unreachable"
	// ReasonListFailing: LISTs, or the store's Replace, kept failing, or a
	// WatchList kept failing or closing before its initial events ended,
	// for the grace period.
	ReasonListFailing DegradedReason = "ListFailing"
	// ReasonWatchFailing: watches kept failing to open, ending with errors
	// or closing with nothing in them, a watch request stayed in flight, or
	// the relist after a lost watch did not complete, for the grace period.
	ReasonWatchFailing DegradedReason = "WatchFailing"
	// ReasonStaleRVLoop: watches kept failing at one resourceVersion.
	ReasonStaleRVLoop DegradedReason = "StaleRVLoop"
	// ReasonStalled: a watch went silent for the stall window.
	ReasonStalled DegradedReason = "Stalled"
	// ReasonShardIgnored: a sharded Reflector's server did not apply the
	// shard selector (see ErrShardIgnored); reported at once.
	ReasonShardIgnored DegradedReason = "ShardIgnored"
	// ReasonRejected: the server rejected a request as malformed (400
	// BadRequest), for example a shard selector it cannot parse; reported
	// at once, since retrying the same request cannot mend it.
	ReasonRejected DegradedReason = "Rejected"
	// ReasonStoreFailing: the store refused a watch event (see
	// ErrStoreRefused), or the Replace of the relist that followed, or an
	// informer's indexer failed to apply a change (see ErrIndexerFailed);
	// reported at once, until a relist goes through.
	ReasonStoreFailing DegradedReason = "StoreFailing"
)

// ReasonWatchFailed is the old name of ReasonWatchFailing, whose value
// ("WatchFailing") it always had.
//
// Deprecated: use ReasonWatchFailing.
const ReasonWatchFailed = ReasonWatchFailing

// Health is a snapshot of a Reflector's health. The contract:
//
//   - Synced: the store is known to be current: a sync completed, or a
//     watch is open, and no loss of touch has lasted the grace period
//     (ReflectorOptions.HealthGrace, 10 s).
//   - A loss of touch begins when a call fails (a LIST, a WatchList, a
//     watch request, a LIST page past its retries, the store's Replace or
//     Resync), a watch ends with an error, a watch closes within the grace
//     period with nothing in it (as a dead server's do behind a load
//     balancer), a WatchList closes before its initial events end, or a
//     request to open a watch is still in flight a grace period after it
//     began. If neither data (an event or bookmark), a completed sync, nor
//     a watch that stays open the grace period follows within the grace
//     period, health becomes Degraded with the reason of the latest failure
//     and LastError set, also while a LIST, WatchList or watch call is
//     still in flight. While a watch is open no such report is made; if it
//     then closes empty, its open time counts as lost. A watch whose
//     connection died silently (client-go's HTTP/2 health check gave up on
//     it: "client connection lost"; or a read timed out) lost touch at its
//     last sign of life (its last event or bookmark, or its opening), so
//     the loss is dated from then: Degraded at once if that is a grace
//     period ago. Such a death is noticed only when the transport's health
//     check fails: HTTP2_READ_IDLE_TIMEOUT_SECONDS (30 s) of silence, then
//     an unanswered ping for HTTP2_PING_TIMEOUT_SECONDS (15 s), read from
//     the environment by client-go's transport when a client is built.
//     We recommend 5 and 5: on kube-apiserver 1.37 a black-hole is then
//     Degraded 10 s after the last event (45 s at the defaults), for one
//     39-byte ping per 5 s of silence per client connection
//     (docs/health.md has the measurements).
//     ReflectorOptions.QuietCheckAfter offers an active check instead: a
//     watch silent that long has its connection checked with a LIST of
//     one object through the ListerWatcher, and a check unanswered within
//     QuietCheckTimeout is such a death (ErrQuietCheckFailed). Over a
//     schedule of resets, refusals, restarts and four black-holes with
//     writes 20 times a second, health said Synced while the store was
//     more than 1 s behind for 150 s in all at the defaults, 40 s with 5
//     and 5, and 2.7-2.9 s with quiet checks after 1 s, a 0.5 s timeout
//     and a HealthGrace of 1.5 s, with no false alarm at any setting
//     (docs/health.md says what the last costs).
//   - Reported at once, because waiting cannot mend them or they have
//     already lasted long: Forbidden (401/403) and NotFound (404) answers,
//     a stall, and a stale-RV loop.
//   - Back to Synced (Syncing before the first sync) when data flows on a
//     watch (a WatchList's initial events do not count: its sync does), a
//     sync completes, or a watch stays open the grace period; after a
//     stall, which is a watch open and silent, only data, a sync, or the
//     server ending the re-watch after the grace period will do. A sync
//     only suspends the loss: if the watch after it fails, before it has
//     shown that it works, in a way that makes the Reflector relist again,
//     the loss goes on from when it began, and once such a loop of relists
//     has been reported, further syncs leave health Degraded (HasSynced
//     set) until a watch works.
//   - No false alarms: a watch the server ends at its timeout and that is
//     re-opened at once, a quiet resource (a watch open for minutes with
//     nothing in it), a 429 or refused connection mended by the next
//     attempt, a 410 followed by a relist that completes within the grace
//     period, and a long initial sync stay Synced or Syncing.
//   - Stopped once Run has returned, with HasSynced and LastError as they
//     were.
//
// classify (classify.go) decides which failures do what; cycle_test.go
// lists them. liveness (liveness.go) owns the loss and its reports;
// liveness_transitions_test.go lists its transitions.
type Health struct {
	State HealthState
	// Reason is set when State is Degraded.
	Reason DegradedReason
	// LastError is the latest error of a failure the Reflector met (a call
	// that failed, a watch that ended with an error): set from the first
	// failure on, before the grace period has made it Degraded, so that
	// WaitForSync can name the cause at once; while Degraded it is the
	// error behind the state (for a loss no error caused, such as watches
	// closing empty, one that says so). It is kept after recovery so that
	// it can still be read; nil until a failure.
	LastError error
	// Since is when State (and Reason) last changed, on the real clock
	// (health does not use ReflectorOptions.Clock).
	Since time.Time
	// HasSynced: the store has been filled at least once.
	HasSynced bool
}

// health owns a Reflector's Health. The loop goroutine writes it; any
// goroutine may read it or wait for a change.
type health struct {
	mu  sync.Mutex
	cur Health
	// changed is closed at the next change; it is made only when someone
	// waits for one (nil otherwise), so changes nobody waits for cost no
	// allocation.
	changed  chan struct{}
	onChange func(Health)
}

func newHealth(now time.Time, onChange func(Health)) *health {
	return &health{cur: Health{State: Syncing, Since: now}, onChange: onChange}
}

func (h *health) snapshot() Health {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur
}

// next returns the health now and a channel closed at its next change.
func (h *health) next() (Health, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.changed == nil {
		h.changed = make(chan struct{})
	}
	return h.cur, h.changed
}

// set moves to state/reason at now; a repeat of the same state and reason
// only refreshes LastError, and not even that if the new error reads the
// same as the last one.
func (h *health) set(state HealthState, reason DegradedReason, err error, now time.Time) {
	h.commit(state, reason, err, state == Synced, now)
}

// markSynced records that the store has been filled, leaving the state and
// reason as they are (a Degraded Reflector whose sync completed while its
// loss of touch goes on).
func (h *health) markSynced(now time.Time) {
	cur := h.snapshot()
	h.commit(cur.State, cur.Reason, nil, true, now)
}

// commit moves to state/reason at now, records err (if any) as LastError
// and, if filled, that the store has been filled; it notifies a change.
// Only the loop goroutine calls it.
func (h *health) commit(state HealthState, reason DegradedReason, err error, filled bool, now time.Time) {
	h.mu.Lock()
	next := h.cur
	if err != nil && !sameText(err, next.LastError) {
		next.LastError = err
	}
	next.HasSynced = next.HasSynced || filled
	if next.State != state || next.Reason != reason {
		next.State, next.Reason, next.Since = state, reason, now
	}
	changed := next != h.cur
	h.cur = next
	if changed && h.changed != nil {
		close(h.changed)
		h.changed = nil
	}
	h.mu.Unlock()
	if changed && h.onChange != nil {
		h.onChange(next)
	}
}

// sameText says whether err and last read the same: a failure repeated
// (each attempt makes a new error value) is not a change of health.
func sameText(err, last error) bool {
	return last != nil && err.Error() == last.Error()
}

func (h *health) healthy(now time.Time) { h.set(Synced, ReasonNone, nil, now) }

// stop records that Run returned at now: Stopped, with HasSynced and
// LastError as they were. It is Run's last write.
func (h *health) stop(now time.Time) { h.set(Stopped, ReasonNone, nil, now) }

// resume records that Run starts at now: a Reflector that had stopped is
// Syncing again (its store is not known to be current until it syncs).
func (h *health) resume(now time.Time) {
	if h.snapshot().State == Stopped {
		h.set(Syncing, ReasonNone, nil, now)
	}
}

// note records err, a failure's error, as LastError without changing the
// state: health has not changed, so nobody is notified (see
// ReflectorOptions.OnHealthChange). While Degraded it does nothing: the
// loss's report records the error and notifies. Only the loop goroutine
// calls it.
func (h *health) note(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil && h.cur.State != Degraded && !sameText(err, h.cur.LastError) {
		h.cur.LastError = err
	}
}

// Health returns the Reflector's current health. Safe from any goroutine.
func (r *Reflector) Health() Health { return r.health.snapshot() }

// HasSynced reports whether the store has been filled from a LIST or a
// WatchList at least once. Safe from any goroutine.
func (r *Reflector) HasSynced() bool { return r.Health().HasSynced }

// ErrNotSynced is wrapped by WaitForSync's error when ctx ends first, or
// when the Reflector (or informer) stopped first (see ErrStopped).
var ErrNotSynced = errors.New("reflector has not synced")

// ErrStopped is wrapped, with ErrNotSynced, by the WaitForSync error of
// a Reflector or informer (or one of the informer's registrations) that
// stopped (Run returned) before it synced, and by the WaitForShard error
// of one that stopped before it synced the shard: nothing will sync it
// any more, so they return at once instead of waiting for their context
// to end.
var ErrStopped = errors.New("stopped")

// WaitForSync blocks until the store has been filled once (nil), ctx
// ends, or Run has returned (at once if it already had). Unsynced, the
// error wraps ErrNotSynced, ctx's error (or ErrStopped) and the last
// error the Reflector met (Health.LastError, set from the first failure
// on), so that, for example, apierrors.IsForbidden(err) tells an RBAC
// problem from a slow server; and while a WatchList streams the initial
// state, it says that it waits for the WatchList's initial-events-end
// bookmark and how many objects have come so far.
func (r *Reflector) WaitForSync(ctx context.Context) error {
	for {
		h, changed := r.health.next()
		switch {
		case h.HasSynced:
			return nil
		case h.State == Stopped:
			return notSyncedError("", ErrStopped, r.syncCause())
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return notSyncedError("", ctx.Err(), r.syncCause())
		}
	}
}

// notSyncedError is the error of a WaitForSync that returns unsynced: it
// wraps ErrNotSynced, why it returned (ctx's error, or ErrStopped) and, if
// known, the cause the store is not filled; what, if not empty, names what
// was waited for.
func notSyncedError(what string, why, cause error) error {
	if what != "" {
		what = ": " + what
	}
	if cause == nil {
		return fmt.Errorf("%w%s: %w", ErrNotSynced, what, why)
	}
	return fmt.Errorf("%w%s (%w): %w", ErrNotSynced, what, why, cause)
}

// syncCause says why the store is not filled yet, as far as the
// Reflector knows, or nil: "last error: " and the last error, preceded,
// while a WatchList streams the initial state, by what it waits for. It
// wraps the last error. Safe from any goroutine.
func (r *Reflector) syncCause() error {
	last := r.Health().LastError
	n, streaming := r.watchListing.get()
	if !streaming {
		if last == nil {
			return nil
		}
		return fmt.Errorf("last error: %w", last)
	}
	wait := fmt.Sprintf("waiting for the WatchList's initial-events-end bookmark (%d objects so far; "+
		"a fake clientset never sends it unless its ListWatch is wrapped with client-go's "+
		"cache.ToListWatcherWithWatchListSemantics)", n)
	if last == nil {
		return errors.New(wait)
	}
	return fmt.Errorf("%s; last error: %w", wait, last)
}
