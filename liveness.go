package cache

import (
	"errors"
	"time"

	"k8s.io/utils/clock"
)

// defaultHealthGrace is how long the Reflector may be without a working
// watch or a completed sync before Health turns Degraded. Ten seconds
// covers what a healthy Reflector goes through when it loses a watch: a
// re-watch or relist after the first few backoff delays (0.8-1.6 s, then
// 1.6-3.2 s, then 3.2-6.4 s) and an apiserver restart behind a load
// balancer (a few seconds); it is short against the outages that matter to
// a reader of Health: a black-holed connection is only noticed after
// HTTP/2's ping check gives up (about 45 s in), and the REST client then
// retries TLS handshakes inside one call for 20-100 s.
const defaultHealthGrace = 10 * time.Second

// errEmptyWatches is the LastError of a Reflector whose watches keep
// opening and closing again with nothing in them, as a dead server's do
// behind a load balancer.
var errEmptyWatches = errors.New("watches keep closing without delivering anything")

// errWatchListIncomplete is the LastError of a Reflector whose WatchList
// keeps closing before its initial-events-end bookmark.
var errWatchListIncomplete = errors.New("WatchList closed before its initial-events-end bookmark")

// errWatchOpenBlocked is the LastError of a Reflector whose request to
// open a watch has been in flight for the grace period (as when the REST
// client retries TLS handshakes to a server that is gone).
var errWatchOpenBlocked = errors.New("the request to open a watch has not returned within the health grace period")

// liveness tracks a loss of touch with the server: the Reflector lost its
// watch (it failed, ended with an error, or closed with nothing in it soon
// after opening) and no watch has shown since that it works. It reports the loss as Degraded health once it has lasted the grace period.
// While a watch is open no such report is made; instead a watch that stays
// open the grace period ends the loss (it works: a quiet resource sends
// nothing), unless the loss is a stall, which is just such a watch. A
// watch that ends sooner without having shown that it works adds the time
// it was open to the loss, so watches that keep opening and closing empty
// are reported once the grace period has passed. A request to open a
// watch that is still in flight a grace period after it began is a loss
// too. A completed sync suspends the loss rather than ending it (see
// synced). The loop goroutine owns it.
//
// Its times and its timer are on the real clock (see realClock), not the
// Reflector's.
type liveness struct {
	grace time.Duration
	// since is when the loss began; zero while in touch.
	since time.Time
	// reason and err describe the loss's latest failure.
	reason DegradedReason
	err    error
	// reported: the loss has been reported as Degraded health.
	reported bool
	// tentative: the loss is only a watch request in flight, forgotten if
	// the watch opens before the loss is reported.
	tentative bool
	// suspended: a sync completed during the loss; the store is current,
	// and the loss ends once a watch shows it works, but goes on from
	// since if the watch fails first.
	suspended bool
	// looping: a watch failed after a sync that had suspended the loss,
	// before it showed that it works: the Reflector is in a loop of
	// relists, which no further sync ends.
	looping bool
	// watchOpen: a watch is open since openedAt; timer, if set, ends its
	// probation.
	watchOpen bool
	// armed: timer is running. One timer serves the Reflector's life,
	// re-armed each time (a watch request arms it), so it is made once.
	armed    bool
	openedAt time.Time
	timer    clock.Timer
	// lastSign is the open watch's last sign of life: when it opened, or
	// its last event or bookmark.
	lastSign time.Time
}

// inLoss says whether touch with the server is lost.
func (l *liveness) inLoss() bool { return !l.since.IsZero() }

// C fires when the loss has lasted the grace period, or when an open
// watch has passed its probation; nil when nothing is due.
func (l *liveness) C() <-chan time.Time {
	if !l.armed {
		return nil
	}
	return l.timer.C()
}

// lose records a failure at now; relist says the failure makes the
// Reflector sync again. It returns true when the loss is to be reported at
// once: it had already been reported (the reason is refreshed), or it has
// lasted the grace period. After a sync that suspended the loss, a failure
// that leads to another sync makes it a loop (it goes on from when it
// began); any other failure begins a new loss.
//
// began is when the loss began: now, or for a connection that died
// silently, the last sign of life of its watch.
func (l *liveness) lose(reason DegradedReason, err error, began, now time.Time, relist bool) bool {
	if l.suspended && relist {
		l.looping = true
	} else if l.suspended && !l.reported {
		l.since, l.looping = time.Time{}, false
	}
	if l.since.IsZero() {
		l.since = began
	}
	l.reason, l.err, l.tentative, l.suspended = reason, err, false, false
	return l.closed(now) || l.reported
}

// inLoop says whether the loss is a loop of syncs whose watches fail.
func (l *liveness) inLoop() bool { return l.looping }

// synced is told that a sync completed during the loss. The loss is
// suspended, not ended: a relist does not show that watches work. It ends
// when a watch that follows shows it works (data, or open the grace
// period); if that watch fails first, the loss goes on from when it began
// (looping), so that a Reflector whose every watch fails right after its
// relist is reported like one whose relists fail. A report is due if no
// watch is open a grace period after the sync. It returns false when
// health must stay Degraded: the loss is a loop already reported. Else the
// sync clears the report, and health may say Synced.
func (l *liveness) synced() bool {
	if l.since.IsZero() {
		return true
	}
	l.suspended, l.tentative = true, false
	l.stopTimer()
	if l.grace > 0 {
		l.arm(l.grace)
	}
	if l.looping && l.reported {
		return false
	}
	// Until a watch fails, what could still be reported is a watch request
	// that does not return.
	l.reported, l.reason, l.err = false, ReasonWatchFailing, errWatchOpenBlocked
	return true
}

// calling is told that a request to open a watch starts at now. If touch
// is not lost, a tentative loss begins, reported if the request is still
// in flight a grace period later (with no grace period, a request in
// flight is not taken for a loss).
func (l *liveness) calling(now time.Time) {
	if !l.since.IsZero() || l.grace <= 0 {
		return
	}
	l.since, l.reason, l.err, l.tentative = now, ReasonWatchFailing, errWatchOpenBlocked, true
	l.arm(l.grace)
}

// opened is told that a watch opened at now: no report is made while it
// is open, and a tentative loss not yet reported is forgotten. Its
// probation begins: should it stay open the grace period, the loss ends
// (at once with no grace period). After a stall, which is a watch open and
// silent, there is no probation.
func (l *liveness) opened(now time.Time) {
	l.watchOpen, l.openedAt, l.lastSign = true, now, now
	switch {
	case l.tentative && !l.reported:
		l.regain()
	case l.inLoss() && l.reason != ReasonStalled:
		l.arm(max(l.grace, 0))
	default:
		l.stopTimer()
	}
}

// openFor is how long the open watch has been open at now.
func (l *liveness) openFor(now time.Time) time.Duration { return now.Sub(l.openedAt) }

// cycleEnded is told that a cycle ended at now, its watch, if any, gone
// with it (the context ended, or the cycle relists). A tentative loss not
// yet reported is forgotten with the request it was waiting on; a loss
// not yet reported is due a grace period after it began.
func (l *liveness) cycleEnded(now time.Time) {
	l.watchOpen = false
	switch {
	case l.tentative && !l.reported:
		l.regain()
	case l.inLoss() && !l.reported && !l.suspended:
		l.arm(max(l.grace-now.Sub(l.since), 0))
	case !l.suspended:
		l.stopTimer()
	}
}

// closed is told that the open watch, if any, ended at now without
// showing that it works. It returns true when the loss has now lasted the
// grace period and is to be reported.
func (l *liveness) closed(now time.Time) bool {
	l.watchOpen = false
	if l.since.IsZero() || l.reported {
		return false
	}
	left := l.grace - now.Sub(l.since)
	if left <= 0 {
		l.report()
		return true
	}
	l.arm(left)
	return false
}

// report marks the loss as reported; the caller sets the health.
func (l *liveness) report() {
	l.stopTimer()
	l.reported = true
}

// regain ends the loss: data flowed, or a watch passed its probation. It
// returns true when the loss had been reported, so that health must change
// back.
func (l *liveness) regain() bool {
	if l.since.IsZero() {
		return false
	}
	reported := l.reported
	l.stopTimer()
	l.since, l.reason, l.err = time.Time{}, ReasonNone, nil
	l.reported, l.tentative, l.suspended, l.looping = false, false, false, false
	return reported
}

// arm makes the timer fire in d, whatever it was set to.
func (l *liveness) arm(d time.Duration) {
	l.stopTimer()
	if l.timer == nil {
		l.timer = realClock.NewTimer(d)
	} else {
		l.timer.Reset(d)
	}
	l.armed = true
}

// stopTimer stops the timer and drops a firing nobody received (a fake
// clock's timer keeps one in its channel), so that C never delivers it.
func (l *liveness) stopTimer() {
	if !l.armed {
		return
	}
	l.armed = false
	if !l.timer.Stop() {
		select {
		case <-l.timer.C():
		default:
		}
	}
}

// lostTouch records a failure that leaves the Reflector without a working
// watch (relist: and makes it sync again): health turns Degraded with
// reason and err once the loss has lasted the grace period (at once if it
// already has, or was already reported).
// With silent set the connection died without a word (see
// silentDeath), and the loss is dated from the watch's last sign of life.
func (r *Reflector) lostTouch(reason DegradedReason, err error, relist, silent bool) {
	now := realClock.Now()
	began := now
	if silent && !r.live.lastSign.IsZero() && r.live.lastSign.Before(now) {
		began = r.live.lastSign
	}
	r.degradeIf(r.live.lose(reason, err, began, now, relist))
}

// reportLoss records a failure that is reported as Degraded at once.
func (r *Reflector) reportLoss(reason DegradedReason, err error, relist bool) {
	now := realClock.Now()
	r.live.lose(reason, err, now, now, relist)
	r.live.report()
	r.degradeIf(true)
}

// watchClosed is told that a watch ended without a failure of its own
// (the server closed it).
func (r *Reflector) watchClosed() { r.degradeIf(r.live.closed(realClock.Now())) }

// graceEnded is called when liveness's timer fires: an open watch has
// passed its probation (it works, so the backoff starts over too), or the
// loss has lasted the grace period.
func (r *Reflector) graceEnded() {
	if r.live.watchOpen {
		r.reachedServer()
		r.inTouch()
		return
	}
	r.live.report()
	r.degradeIf(true)
}

// degradeIf sets Degraded health from the loss when due.
func (r *Reflector) degradeIf(due bool) {
	if due {
		r.health.set(Degraded, r.live.reason, r.live.err, realClock.Now())
	}
}

// syncCompleted is told that a sync completed: the store is current and
// has been filled. Health is Synced, unless the sync is one of a loop of
// relists whose watches fail at once that has been reported (see
// liveness.synced): then it stays Degraded until a watch shows it works.
func (r *Reflector) syncCompleted() {
	now := realClock.Now()
	if !r.live.inLoop() {
		// The server serves the Reflector again; in a loop of relists whose
		// watches fail, it does not, and the backoff keeps growing.
		r.reachedServer()
	}
	if !r.live.synced() {
		r.health.markSynced(now)
		return
	}
	r.health.healthy(now)
}

// inTouch is told that data flowed or a watch passed its probation: a loss ends, and
// if it had been reported health returns to Synced (Syncing before the
// first sync). Cheap when nothing was lost: it runs for every burst.
func (r *Reflector) inTouch() {
	if !r.live.inLoss() {
		return
	}
	if r.live.regain() {
		state := Syncing
		if r.health.snapshot().HasSynced {
			state = Synced
		}
		r.health.set(state, ReasonNone, nil, realClock.Now())
	}
}
