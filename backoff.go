package cache

import (
	"math"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Default backoff between ListAndWatch attempts: 0.8 s doubling to a 30 s
// cap, each delay stretched by up to 100 % jitter, and back to 0.8 s after
// two minutes without a failure or as soon as the server is reached again
// (see liveness.reached).
const (
	defaultBackoffInit   = 800 * time.Millisecond
	defaultBackoffMax    = 30 * time.Second
	defaultBackoffReset  = 2 * time.Minute
	defaultBackoffFactor = 2.0
	defaultBackoffJitter = 1.0
)

func defaultBackoff() wait.Backoff {
	return wait.Backoff{
		Duration: defaultBackoffInit,
		Cap:      defaultBackoffMax,
		Steps:    int(math.Ceil(float64(defaultBackoffMax) / float64(defaultBackoffInit))),
		Factor:   defaultBackoffFactor,
		Jitter:   defaultBackoffJitter,
	}
}

// backoff computes delays for a wait.Backoff configuration. Time and
// randomness are arguments, so the arithmetic is deterministic under test.
// It is not safe for concurrent use; the Reflector's loop goroutine owns it.
type backoff struct {
	initial wait.Backoff
	current wait.Backoff
	// resetAfter: a step taken more than this long after the previous one
	// starts again from the initial delay. Zero never resets.
	resetAfter time.Duration
	lastStep   time.Time
	// grown: a step has moved current away from initial, so reset has
	// something to undo. It keeps reset to one branch when nothing grew.
	grown bool
}

func newBackoff(cfg wait.Backoff, resetAfter time.Duration) *backoff {
	return &backoff{initial: cfg, current: cfg, resetAfter: resetAfter}
}

// next returns the delay to wait before the next attempt, given the current
// time and a uniform random number in [0, 1) for the jitter.
func (b *backoff) next(now time.Time, random float64) time.Duration {
	if b.resetAfter > 0 && !b.lastStep.IsZero() && now.Sub(b.lastStep) > b.resetAfter {
		b.current = b.initial
	}
	b.lastStep = now
	d := b.current.Duration
	b.advance()
	b.grown = true
	if j := b.current.Jitter; j > 0 {
		d += time.Duration(random * j * float64(d))
	}
	return d
}

// advance moves the base duration one step along the exponential curve.
// With Steps exhausted (or zero) the duration stays where it is.
func (b *backoff) advance() {
	c := &b.current
	if c.Steps < 1 || c.Factor == 0 {
		return
	}
	c.Steps--
	grown := time.Duration(float64(c.Duration) * c.Factor)
	if c.Cap > 0 && grown > c.Cap {
		grown = c.Cap
		c.Steps = 0
	}
	c.Duration = grown
}

// reset starts the curve again from the initial delay: the next call to
// next returns what the first one did. Cheap when nothing has grown, so it
// may be called for every burst of watch events.
func (b *backoff) reset() {
	if b.grown {
		b.current, b.grown = b.initial, false
	}
}

// delay is the wait before the next attempt after a failure whose server
// asked for retryAfter (zero if it did not): the next backoff delay, or
// retryAfter if that is longer. It is the one delay formula; every wait
// after a failure (a cycle, a watch, a WatchList, a LIST page) uses it.
func (b *backoff) delay(now time.Time, random float64, retryAfter time.Duration) time.Duration {
	return max(b.next(now, random), retryAfter)
}
