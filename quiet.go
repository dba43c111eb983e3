package cache

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

// defaultQuietCheckTimeout is how long a quiet check may take when
// ReflectorOptions.QuietCheckTimeout is not set.
const defaultQuietCheckTimeout = 5 * time.Second

// ErrQuietCheckFailed wraps the error of a quiet check that got no answer:
// a watch had been silent for ReflectorOptions.QuietCheckAfter, and a small
// LIST through the same ListerWatcher (so, normally, over the same
// connection) failed without the server answering, or timed out. It is the
// LastError of the Degraded health that follows; IsQuietCheckFailed tells
// it.
var ErrQuietCheckFailed = errors.New("a watch went quiet and a check of its connection got no answer")

// IsQuietCheckFailed reports whether err is, or wraps, ErrQuietCheckFailed.
func IsQuietCheckFailed(err error) bool { return errors.Is(err, ErrQuietCheckFailed) }

// quietCheck asks the server, after an open watch has been silent for
// after, whether the connection still works: a LIST of at most one object
// at the latest resourceVersion ("": one item, whatever the size of the
// collection; at "0" kube-apiserver 1.37's watch cache would ignore the
// limit and send the whole collection) through the Reflector's ListerWatcher, with a timeout.
// An answer, even an error status, is a sign of life of the connection; no
// answer is a silent death of the watch's connection, dated from its last
// sign of life (see classify's atQuietCheck). The watch itself is left
// open: should data come after all, touch is regained. The zero value
// never checks. One stream owns it.
type quietCheck struct {
	after, timeout time.Duration
	lw             ListerWatcherWithContext
	watch          *watching
	// timer fires when the silence may have lasted after; nil while
	// turned off.
	timer clock.Timer
	// call is the check in flight; nil when none is.
	call *quietCall
}

// quietCall is one check, run in its own goroutine, which fills err and
// then sends the time of the answer on done (buffered: the goroutine never
// waits, and exits when the call returns even if nobody receives).
type quietCall struct {
	err    error
	done   chan time.Time
	cancel context.CancelFunc
}

// newQuietCheck returns the quiet check of the watch wg; the zero value if
// the Reflector does not check quiet watches.
func (c *cycle) newQuietCheck(wg *watching) quietCheck {
	r := c.r
	if r.quietAfter <= 0 {
		return quietCheck{}
	}
	return quietCheck{after: r.quietAfter, timeout: r.quietTimeout, lw: r.lw, watch: wg,
		timer: realClock.NewTimer(r.quietAfter)}
}

// C fires when a check may be due; never while one is in flight.
func (q *quietCheck) C() <-chan time.Time {
	if q.timer == nil || q.call != nil {
		return nil
	}
	return q.timer.C()
}

// answered delivers when the check in flight got its answer (or none).
func (q *quietCheck) answered() <-chan time.Time {
	if q.call == nil {
		return nil
	}
	return q.call.done
}

// due is called when C fired at now: if the watch has been silent for
// after, a check starts; otherwise the timer waits out the rest.
func (q *quietCheck) due(ctx context.Context, now time.Time) {
	if left := q.after - now.Sub(q.watch.lastSign); left > 0 {
		q.timer.Reset(left)
		return
	}
	cctx, cancel := context.WithTimeout(ctx, q.timeout)
	call := &quietCall{done: make(chan time.Time, 1), cancel: cancel}
	q.call = call
	lw := q.lw
	go func() {
		defer cancel()
		_, call.err = lw.ListWithContext(cctx, metav1.ListOptions{Limit: 1})
		call.done <- realClock.Now()
	}()
}

// take returns the answer of the check that answered and arms the timer
// for the next one, after more silence.
func (q *quietCheck) take() error {
	err := q.call.err
	q.call = nil
	q.timer.Reset(q.after)
	return err
}

// stop stops the timer and the check in flight (whose goroutine exits when
// its call returns).
func (q *quietCheck) stop() {
	if q.timer != nil {
		q.timer.Stop()
	}
	if q.call != nil {
		q.call.cancel()
		q.call = nil
	}
}

// quietAnswer carries out the answer of a quiet check: a sign of life of
// the watch's connection, or a failure (see classify's atQuietCheck).
func (s *streamer) quietAnswer(ctx context.Context) {
	err := s.quiet.take()
	if quietCheckAnswered(err) || ctx.Err() != nil {
		s.watch.lastSign = realClock.Now()
		return
	}
	silent := realClock.Since(s.watch.lastSign).Round(time.Millisecond)
	err = fmt.Errorf("%w: silent for %v: %w", ErrQuietCheckFailed, silent, err)
	s.c.apply(classify(atQuietCheck, err, facts{}), s.pos.watchRV(), err)
}
