package cache

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
)

// defaultPageRetries is how many times in a row one page of a paginated
// LIST is retried after transient errors before the LIST fails.
const defaultPageRetries = 6

// pageRetry decides whether, and after how long, a page of a paginated
// LIST that failed is asked for again from its continue token, so that a
// large initial list survives a hiccup near its end without starting over.
// It belongs to one LIST and to the goroutine running it; its randomness
// comes from its own generator, made at the first failure. The zero value
// never retries.
type pageRetry struct {
	clock clock.Clock
	// limit is how many consecutive failures of one page are retried.
	limit int
	// cfg is the Reflector's backoff configuration, which nothing changes
	// after construction, so the LIST's goroutine may read it.
	cfg  *wait.Backoff
	seed [2]uint64
	rand *rand.Rand
	// streak is the backoff of the current run of failures; nil when the
	// last page succeeded.
	streak *backoff
	fails  int
}

// newPageRetry returns the page retry policy for one LIST (the zero value
// when page retries are turned off). Only the loop goroutine may call it.
func (r *Reflector) newPageRetry() pageRetry {
	if r.pageRetries < 0 {
		return pageRetry{}
	}
	return pageRetry{
		clock: realClock,
		limit: r.pageRetries,
		cfg:   &r.backoff.initial,
		seed:  [2]uint64{r.rand.Uint64(), r.rand.Uint64()},
	}
}

// wait blocks for the delay before a page that failed is asked for again:
// the next backoff delay, or retryAfter if that is longer. It returns
// false, without waiting, when the page failed too often, and false when
// ctx ends during the wait. Whether a failure may be retried at all is
// classify's to say (stepRetryPage).
func (p *pageRetry) wait(ctx context.Context, retryAfter time.Duration) bool {
	if p.fails >= p.limit || ctx.Err() != nil {
		return false
	}
	if p.streak == nil {
		p.streak = newBackoff(*p.cfg, 0)
	}
	if p.rand == nil {
		p.rand = rand.New(rand.NewPCG(p.seed[0], p.seed[1]))
	}
	p.fails++
	return sleepOn(ctx, p.clock, p.streak.delay(p.clock.Now(), p.rand.Float64(), retryAfter))
}

// succeeded ends the current run of failures.
func (p *pageRetry) succeeded() {
	p.streak, p.fails = nil, 0
}

// isTransientListError: a LIST page failed in a way that says nothing about
// the request itself (the server was overloaded, restarting or unreachable,
// or the connection broke), so the same request may well succeed later.
func isTransientListError(err error) bool {
	if isRVUnavailable(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var netErr net.Error
	switch {
	case utilnet.IsConnectionRefused(err), utilnet.IsConnectionReset(err), utilnet.IsProbableEOF(err),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	case errors.As(err, &netErr) && netErr.Timeout():
		return true
	case apierrors.IsTooManyRequests(err), apierrors.IsTimeout(err), apierrors.IsServerTimeout(err):
		return true
	}
	var status apierrors.APIStatus
	return errors.As(err, &status) && status.Status().Code >= 500
}
