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

// touch is where a Reflector stands with the server.
type touch uint8

const (
	// inTouch: no loss; health follows the syncs.
	inTouch touch = iota
	// inCall: in touch, with a request to open a watch in flight since
	// since. Should it still be in flight a grace period later, that is a
	// loss (errWatchOpenBlocked), already reported; if the watch opens or
	// the cycle ends first, nothing happened.
	inCall
	// lost: touch is lost since since (a watch failed, ended with nothing
	// in it, or its relist failed) and no watch has shown since that it
	// works. Reported as Degraded once it has lasted the grace period.
	lost
	// suspended: a sync completed during the loss. The store is current,
	// so health says so, but the loss is not over: it ends when a watch
	// shows it works; should that watch fail and the Reflector relist,
	// the loss is a loop (see liveness.loop) that goes on from since.
	suspended
)

func (t touch) String() string {
	return [...]string{"inTouch", "inCall", "lost", "suspended"}[t]
}

// timerUse is what the liveness timer is armed for.
type timerUse uint8

const (
	timerOff timerUse = iota
	// timerDue: the loss has lasted the grace period when it fires.
	timerDue
	// timerProbation: the open watch has passed its probation (it stayed
	// open the grace period) when it fires.
	timerProbation
)

// liveness owns what the Reflector knows of its touch with the server, and
// the two things that follow from it: health's Degraded reports, and the
// reset of the backoff when the server serves the Reflector again. Every
// change goes through one of its event methods (calling, opened, flowing,
// worked, failed, closed, synced, fired, cycleEnded, reached, stop);
// TestLivenessTransitions lists what each does in each state. The loop
// goroutine owns it; its times and timer are on the real clock (see
// realClock), not the Reflector's.
type liveness struct {
	grace   time.Duration
	health  *health
	backoff *backoff
	state   touch
	// since is when the call (inCall) or the loss began; zero in touch.
	since time.Time
	// reason and err describe the loss's latest failure.
	reason DegradedReason
	err    error
	// reported: the loss has been reported as Degraded health (lost, or
	// suspended in a loop).
	reported bool
	// loop: a watch failed after a sync that suspended the loss, before it
	// showed that it works, and the Reflector relisted: a loop of relists,
	// which no further sync ends and in which the backoff keeps growing.
	loop bool
	// use is what timer is armed for. One timer serves the Reflector's
	// life, re-armed each time (a watch request arms it), so it is made
	// once.
	use   timerUse
	timer clock.Timer
}

// failure is a failure as liveness needs to know it.
type failure struct {
	reason DegradedReason
	// err is the loss's error; cause the error the failure came with, noted
	// in health at once (nil for a watch closed empty, whose err says so).
	err, cause error
	// began is when the loss began: now, or for a connection that died
	// silently, the last sign of life of its watch.
	began time.Time
	// relist: the failure makes the Reflector sync again.
	relist bool
	// now: report it at once, whatever the grace period (a refusal
	// waiting cannot mend, or a loss known to be long already).
	now bool
}

// C fires when the loss has lasted the grace period, or the open watch
// has passed its probation; nil when nothing is due. Whoever waits on the
// loop goroutine selects on it and calls fired.
func (l *liveness) C() <-chan time.Time {
	if l.use == timerOff {
		return nil
	}
	return l.timer.C()
}

// inLoss says whether touch with the server is lost (or a sync suspended
// the loss).
func (l *liveness) inLoss() bool { return l.state == lost || l.state == suspended }

// calling is told that a request to open a watch starts at now. In touch,
// the call is watched: should it be in flight a grace period later, that
// is reported (with no grace period, a call in flight is not a loss).
func (l *liveness) calling(now time.Time) {
	if l.state != inTouch || l.grace <= 0 {
		return
	}
	l.state, l.since = inCall, now
	l.reason, l.err = ReasonWatchFailing, errWatchOpenBlocked
	l.arm(timerDue, l.grace)
}

// opened is told that a watch opened. A call being watched is forgotten;
// during a loss the watch's probation begins (should it stay open the
// grace period, the loss ends; with no grace period, at once), except
// after a stall, which is just such a watch.
func (l *liveness) opened() {
	switch {
	case l.state == inCall:
		l.regain(time.Time{})
	case l.inLoss() && l.reason != ReasonStalled:
		l.arm(timerProbation, max(l.grace, 0))
	default:
		l.stopTimer()
	}
}

// flowing is told that a watch delivered data at now: the server serves
// the Reflector (the backoff starts over) and a loss ends. Cheap when
// nothing was lost: it runs for every burst of events.
func (l *liveness) flowing(now time.Time) {
	l.backoff.reset()
	if l.state != inTouch {
		l.regain(now)
	}
}

// worked is told that the server closed a watch that had been open the
// grace period: it worked, which ends a loss (even a stall).
func (l *liveness) worked(now time.Time) {
	if l.state != inTouch {
		l.regain(now)
	}
}

// failed is told that f happened at now, leaving the Reflector without a
// working watch. It begins a loss, or goes on with one (its reason
// refreshed), notes its cause as health's LastError at once (see
// health.note), and reports it when due: at once for f.now, when it has
// lasted the grace period, or when it was reported already. After a sync
// that suspended the loss, a failure that relists makes it a loop, which
// goes on from when it began; any other failure, unless the loop was
// reported, begins a new loss.
func (l *liveness) failed(f failure, now time.Time) {
	l.watchGone()
	l.health.note(f.cause)
	switch {
	case l.state == inTouch:
		l.since = f.began
	case l.state == suspended && f.relist:
		l.loop = true
	case l.state == suspended && !l.reported:
		l.since, l.loop = f.began, false
	}
	l.state, l.reason, l.err = lost, f.reason, f.err
	if f.now {
		l.report(now)
		return
	}
	if !l.dueCheck(now) && l.reported {
		l.degrade(now)
	}
}

// closed is told that a watch ended, or a call failed, in a way that
// shows nothing wrong (the server closed the watch) but does not end a
// loss either: a loss in progress is reported if it is now due.
func (l *liveness) closed(now time.Time) {
	l.watchGone()
	if l.inLoss() {
		l.dueCheck(now)
	}
}

// dueCheck reports the loss if it has lasted the grace period at now, and
// otherwise arms the timer for when it will have; true if it reported.
func (l *liveness) dueCheck(now time.Time) bool {
	if l.reported {
		return false
	}
	left := l.grace - now.Sub(l.since)
	if left <= 0 {
		l.report(now)
		return true
	}
	l.arm(timerDue, left)
	return false
}

// synced is told that a sync completed at now: the store is current.
// Health says Synced, except in a loop already reported, which stays
// Degraded until a watch shows it works. During a loss the sync suspends
// it rather than ending it (a relist does not show that watches work):
// a report is due again should no watch open within the grace period
// after the sync. Unless in a loop, the server serves the Reflector again
// and the backoff starts over.
func (l *liveness) synced(now time.Time) {
	l.reached()
	if l.state == inTouch {
		l.health.healthy(now)
		return
	}
	l.state = suspended
	l.stopTimer()
	if l.grace > 0 {
		l.arm(timerDue, l.grace)
	}
	if l.loop && l.reported {
		l.health.markSynced(now)
		return
	}
	// Until a watch fails, what could still be reported is a watch
	// request that does not return.
	l.reported, l.reason, l.err = false, ReasonWatchFailing, errWatchOpenBlocked
	l.health.healthy(now)
}

// fired is told that the timer fired at now: the open watch passed its
// probation (it works: the loss ends and the backoff starts over), or the
// loss (or the call) has lasted the grace period and is reported.
func (l *liveness) fired(now time.Time) {
	use := l.use
	l.use = timerOff
	if use == timerProbation {
		l.backoff.reset()
		l.regain(now)
		return
	}
	if l.state == inCall {
		l.state = lost
	}
	l.report(now)
}

// cycleEnded is told that a cycle ended at now, its watch, if any, gone
// with it. A call being watched is forgotten with it; a loss not yet
// reported is due a grace period after it began; a suspended loss keeps
// its timer.
func (l *liveness) cycleEnded(now time.Time) {
	l.watchGone()
	switch {
	case l.state == inCall:
		l.regain(time.Time{})
	case l.state == lost && !l.reported:
		l.arm(timerDue, max(l.grace-now.Sub(l.since), 0))
	case l.state != suspended:
		l.stopTimer()
	}
}

// reached is told that the server answered in a way that shows it serves
// the Reflector: the backoff starts over, except in a loop of relists
// whose watches fail, which keeps backing off.
func (l *liveness) reached() {
	if !l.loop {
		l.backoff.reset()
	}
}

// stop is told that Run returned: the loss, if any, and the timer are
// forgotten, so that a later Run starts in touch. Health is left to the
// caller (see health.stop).
func (l *liveness) stop() {
	l.stopTimer()
	*l = liveness{grace: l.grace, health: l.health, backoff: l.backoff, timer: l.timer}
}

// watchGone is told that the open watch, if any, is gone: its probation
// cannot be passed any more, and when its timer fires the loss is due.
func (l *liveness) watchGone() {
	if l.use == timerProbation {
		l.use = timerDue
	}
}

// report marks the loss reported at now and says so in health.
func (l *liveness) report(now time.Time) {
	l.stopTimer()
	l.reported = true
	l.degrade(now)
}

func (l *liveness) degrade(now time.Time) {
	l.health.set(Degraded, l.reason, l.err, now)
}

// regain ends the loss (or the call). If it had been reported, health
// returns to Synced at now (Syncing before the first sync).
func (l *liveness) regain(now time.Time) {
	reported := l.reported
	l.stopTimer()
	*l = liveness{grace: l.grace, health: l.health, backoff: l.backoff, timer: l.timer}
	if reported {
		state := Syncing
		if l.health.snapshot().HasSynced {
			state = Synced
		}
		l.health.set(state, ReasonNone, nil, now)
	}
}

// arm makes the timer fire in d for use, whatever it was set to.
func (l *liveness) arm(use timerUse, d time.Duration) {
	l.stopTimer()
	if l.timer == nil {
		l.timer = realClock.NewTimer(d)
	} else {
		l.timer.Reset(d)
	}
	l.use = use
}

// stopTimer stops the timer and drops a firing nobody received (a fake
// clock's timer keeps one in its channel), so that C never delivers it.
func (l *liveness) stopTimer() {
	if l.use == timerOff {
		return
	}
	l.use = timerOff
	if !l.timer.Stop() {
		select {
		case <-l.timer.C():
		default:
		}
	}
}
