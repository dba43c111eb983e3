package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
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
)

func (s HealthState) String() string {
	switch s {
	case Syncing:
		return "Syncing"
	case Synced:
		return "Synced"
	case Degraded:
		return "Degraded"
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
	// ReasonThrottled: a call got 429, or a watch open failed in a way
	// that is retried after a backoff.
	ReasonThrottled DegradedReason = "Throttled"
	// ReasonUnreachable: the connection was refused.
	ReasonUnreachable DegradedReason = "Unreachable"
	// ReasonListFailing: a LIST failed, or a WatchList kept failing or
	// closing before its initial events ended.
	ReasonListFailing DegradedReason = "ListFailing"
	// ReasonWatchFailing: opening a watch failed, or watches kept ending
	// with errors or closing with nothing in them.
	ReasonWatchFailing DegradedReason = "WatchFailing"
	// ReasonStaleRVLoop: watches kept failing at one resourceVersion.
	ReasonStaleRVLoop DegradedReason = "StaleRVLoop"
	// ReasonStalled: a watch went silent for the stall window.
	ReasonStalled DegradedReason = "Stalled"
)

// ReasonWatchFailed is the old name of ReasonWatchFailing, whose value
// ("WatchFailing") it always had.
//
// Deprecated: use ReasonWatchFailing.
const ReasonWatchFailed = ReasonWatchFailing

// Health is a snapshot of a Reflector's health. The contract:
//
//   - Synced: the store is known to be current: a watch is open and has
//     not been shown dead, or a sync completed, and no loss of touch has
//     lasted the grace period (ReflectorOptions.HealthGrace, 10 s).
//   - A loss of touch begins when a watch ends with an error, a watch
//     closes within the grace period with nothing in it (as a dead server's
//     do behind a load balancer), or a WatchList closes before its initial
//     events end. If neither data (an event or bookmark) nor a completed
//     sync follows within the grace period, health becomes Degraded with
//     the reason of the latest failure and LastError set, also while a LIST
//     or WatchList call is still in flight. While a watch is open no such
//     report is made; if it then closes empty, its open time counts as lost.
//   - Calls the server answers with a failure (401/403, 404, 429, refused
//     connections, a failed LIST or watch open, a stale-RV loop, a stall)
//     make health Degraded at once, as before the grace period existed.
//   - After a loss of touch, health returns to Synced only when data flows
//     or a sync completes; a watch that merely opens is not enough. After
//     a failure that was reported at once, an opened watch is.
//   - No false alarms: a watch the server ends at its timeout and that is
//     re-opened at once, a quiet resource (a watch open for minutes with
//     nothing in it), a 410 followed by a relist that completes within the
//     grace period, and a long initial sync stay Synced or Syncing (a
//     relist after a 410 that takes longer is a loss of touch like any
//     other).
type Health struct {
	State HealthState
	// Reason is set when State is Degraded.
	Reason DegradedReason
	// LastError is the error behind the last Degraded state; it is kept
	// after recovery so that it can still be read.
	LastError error
	// Since is when State (and Reason) last changed.
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
// only refreshes LastError.
func (h *health) set(state HealthState, reason DegradedReason, err error, now time.Time) {
	h.mu.Lock()
	next := h.cur
	if err != nil {
		next.LastError = err
	}
	if state == Synced {
		next.HasSynced = true
	}
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

func (h *health) healthy(now time.Time) { h.set(Synced, ReasonNone, nil, now) }

// failed records err, classified, as the reason for being Degraded.
func (h *health) failed(err error, fallback DegradedReason, now time.Time) {
	h.set(Degraded, classify(err, fallback), err, now)
}

func classify(err error, fallback DegradedReason) DegradedReason {
	switch {
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return ReasonForbidden
	case apierrors.IsNotFound(err):
		return ReasonNotFound
	case apierrors.IsTooManyRequests(err):
		return ReasonThrottled
	case utilnet.IsConnectionRefused(err):
		return ReasonUnreachable
	}
	return fallback
}

// Health returns the Reflector's current health. Safe from any goroutine.
func (r *Reflector) Health() Health { return r.health.snapshot() }

// HasSynced reports whether the store has been filled from a LIST or a
// WatchList at least once. Safe from any goroutine.
func (r *Reflector) HasSynced() bool { return r.Health().HasSynced }

// ErrNotSynced is wrapped by WaitForSync's error when ctx ends first.
var ErrNotSynced = errors.New("reflector has not synced")

// WaitForSync blocks until the store has been filled once (nil) or ctx
// ends. In the second case the error wraps ErrNotSynced, ctx's error and
// the last error the Reflector met, so that, for example,
// apierrors.IsForbidden(err) tells an RBAC problem from a slow server.
func (r *Reflector) WaitForSync(ctx context.Context) error {
	for {
		h, changed := r.health.next()
		if h.HasSynced {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			if h.LastError != nil {
				return fmt.Errorf("%w (%w): last error: %w", ErrNotSynced, ctx.Err(), h.LastError)
			}
			return fmt.Errorf("%w: %w", ErrNotSynced, ctx.Err())
		}
	}
}
