package cache

import (
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// given is where a liveness stands before an event: its state, how long
// ago its loss (or call) began, and its flags and timer.
type given struct {
	state    touch
	ago      time.Duration
	reported bool
	loop     bool
	use      timerUse
	reason   DegradedReason
}

// then is where it stands after: the state, flags, timer, health, whether
// the backoff started over, and how long ago the loss now began.
type then struct {
	state    touch
	reported bool
	loop     bool
	use      timerUse
	health   HealthState
	reset    bool
	ago      time.Duration
}

type transition struct {
	name  string
	given given
	event func(l *liveness, now time.Time)
	want  then
}

var errBoom = errors.New("boom")

func lose(f failure) func(*liveness, time.Time) {
	return func(l *liveness, now time.Time) {
		f := f
		if f.began.IsZero() {
			f.began = now
		}
		l.failed(f, now)
	}
}

func loseSilent(ago time.Duration) func(*liveness, time.Time) {
	return func(l *liveness, now time.Time) {
		l.failed(failure{reason: ReasonWatchFailing, err: errBoom, began: now.Add(-ago)}, now)
	}
}

var (
	evCalling    = func(l *liveness, now time.Time) { l.calling(now) }
	evOpened     = func(l *liveness, now time.Time) { l.opened() }
	evFlowing    = func(l *liveness, now time.Time) { l.flowing(now) }
	evWorked     = func(l *liveness, now time.Time) { l.worked(now) }
	evClosed     = func(l *liveness, now time.Time) { l.closed(now) }
	evSynced     = func(l *liveness, now time.Time) { l.synced(now) }
	evFired      = func(l *liveness, now time.Time) { l.fired(now) }
	evCycleEnded = func(l *liveness, now time.Time) { l.cycleEnded(now) }
	evReached    = func(l *liveness, now time.Time) { l.reached() }
	evStop       = func(l *liveness, now time.Time) { l.stop() }
	evFail       = lose(failure{reason: ReasonWatchFailing, err: errBoom})
	evFailRelist = lose(failure{reason: ReasonWatchFailing, err: errBoom, relist: true})
	evFailNow    = lose(failure{reason: ReasonForbidden, err: errBoom, now: true})
)

// TestLivenessTransitions lists what each event does to liveness in each
// state (grace period 10 s), as TestClassify lists what each failure
// means: the answer to "what does health do after X?".
func TestLivenessTransitions(t *testing.T) {
	lostFor := func(ago time.Duration) given {
		return given{state: lost, ago: ago, use: timerDue, reason: ReasonWatchFailing}
	}
	reportedLoss := given{state: lost, ago: time.Minute, reported: true, reason: ReasonWatchFailing}
	suspendedLoss := given{state: suspended, ago: time.Minute, use: timerDue, reason: ReasonWatchFailing}
	loopReported := given{state: lost, ago: time.Minute, reported: true, loop: true, reason: ReasonWatchFailing}
	for _, tc := range []transition{
		// In touch.
		{"in touch: a watch request is watched", given{}, evCalling, then{state: inCall, use: timerDue, health: Synced}},
		{"in touch: a watch opens", given{}, evOpened, then{health: Synced}},
		{"in touch: data flows", given{}, evFlowing, then{health: Synced, reset: true}},
		{"in touch: a failure begins a loss", given{}, evFail, then{state: lost, use: timerDue, health: Synced}},
		{"in touch: a silent death 12 s after the last sign of life is reported at once", given{}, loseSilent(12 * time.Second),
			then{state: lost, reported: true, health: Degraded, ago: 12 * time.Second}},
		{"in touch: a refusal is reported at once", given{}, evFailNow, then{state: lost, reported: true, health: Degraded}},
		{"in touch: a clean close", given{}, evClosed, then{health: Synced}},
		{"in touch: a sync", given{}, evSynced, then{health: Synced, reset: true}},
		{"in touch: the server answered", given{}, evReached, then{health: Synced, reset: true}},

		// A watch request in flight.
		{"in a call: the watch opens", given{state: inCall, ago: time.Second, use: timerDue}, evOpened, then{health: Synced}},
		{"in a call: still in flight after the grace period", given{state: inCall, ago: 10 * time.Second, use: timerDue}, evFired,
			then{state: lost, reported: true, health: Degraded, ago: 10 * time.Second}},
		{"in a call: the cycle ends", given{state: inCall, ago: time.Second, use: timerDue}, evCycleEnded, then{health: Synced}},
		{"in a call: the request fails (the loss began with the call)", given{state: inCall, ago: 3 * time.Second, use: timerDue}, evFail,
			then{state: lost, use: timerDue, health: Synced, ago: 3 * time.Second}},

		// A loss not yet reported.
		{"lost: a watch opens on probation", lostFor(3 * time.Second), evOpened, then{state: lost, use: timerProbation, health: Synced, ago: 3 * time.Second}},
		{"lost: after a stall a watch has no probation", given{state: lost, ago: 3 * time.Second, use: timerDue, reason: ReasonStalled}, evOpened,
			then{state: lost, health: Synced, ago: 3 * time.Second}},
		{"lost: data flows", lostFor(3 * time.Second), evFlowing, then{health: Synced, reset: true}},
		{"lost: another failure within the grace period", lostFor(3 * time.Second), evFail, then{state: lost, use: timerDue, health: Synced, ago: 3 * time.Second}},
		{"lost: another failure past the grace period", lostFor(11 * time.Second), evFail, then{state: lost, reported: true, health: Degraded, ago: 11 * time.Second}},
		{"lost: a clean close past the grace period", lostFor(11 * time.Second), evClosed, then{state: lost, reported: true, health: Degraded, ago: 11 * time.Second}},
		{"lost: the grace period ends", lostFor(10 * time.Second), evFired, then{state: lost, reported: true, health: Degraded, ago: 10 * time.Second}},
		{"lost: a sync suspends the loss", lostFor(3 * time.Second), evSynced, then{state: suspended, use: timerDue, health: Synced, reset: true, ago: 3 * time.Second}},
		{"lost: the cycle ends", lostFor(3 * time.Second), evCycleEnded, then{state: lost, use: timerDue, health: Synced, ago: 3 * time.Second}},

		// A watch on probation during a loss.
		{"probation: passed", given{state: lost, ago: 20 * time.Second, use: timerProbation, reason: ReasonWatchFailing}, evFired, then{health: Synced, reset: true}},
		{"probation: the server closed the watch after the grace period", given{state: lost, ago: 20 * time.Second, use: timerProbation, reason: ReasonStalled}, evWorked,
			then{health: Synced}},
		{"probation: the watch failed first", given{state: lost, ago: 20 * time.Second, use: timerProbation, reason: ReasonWatchFailing}, evFail,
			then{state: lost, reported: true, health: Degraded, ago: 20 * time.Second}},
		{"probation: the cycle ended first", given{state: lost, ago: 3 * time.Second, use: timerProbation, reason: ReasonWatchFailing}, evCycleEnded,
			then{state: lost, use: timerDue, health: Synced, ago: 3 * time.Second}},

		// A loss reported.
		{"reported: data flows", reportedLoss, evFlowing, then{health: Synced, reset: true}},
		{"reported: a sync suspends it, and health says Synced", reportedLoss, evSynced, then{state: suspended, use: timerDue, health: Synced, reset: true, ago: time.Minute}},
		{"reported: another failure refreshes the report", reportedLoss, evFail, then{state: lost, reported: true, health: Degraded, ago: time.Minute}},
		{"reported: the cycle ends", reportedLoss, evCycleEnded, then{state: lost, reported: true, health: Degraded, ago: time.Minute}},

		// A loss suspended by a sync.
		{"suspended: the watch fails and the Reflector relists: a loop", suspendedLoss, evFailRelist,
			then{state: lost, loop: true, reported: true, health: Degraded, ago: time.Minute}},
		{"suspended: the watch fails and is re-opened: a new loss", suspendedLoss, evFail, then{state: lost, use: timerDue, health: Synced}},
		{"suspended: a watch opens on probation", suspendedLoss, evOpened, then{state: suspended, use: timerProbation, health: Synced, ago: time.Minute}},
		{"suspended: no watch opened within the grace period", suspendedLoss, evFired, then{state: suspended, reported: true, health: Degraded, ago: time.Minute}},
		{"suspended: the cycle ends, the timer runs on", suspendedLoss, evCycleEnded, then{state: suspended, use: timerDue, health: Synced, ago: time.Minute}},

		// A loop of relists whose watches fail.
		{"loop: a sync leaves it Degraded", loopReported, evSynced, then{state: suspended, loop: true, reported: true, use: timerDue, health: Degraded, ago: time.Minute}},
		{"loop: the server answering does not reset the backoff", loopReported, evReached, then{state: lost, loop: true, reported: true, health: Degraded, ago: time.Minute}},
		{"loop: data flows", loopReported, evFlowing, then{health: Synced, reset: true}},
		{"loop: a failure without a relist goes on with it", given{state: suspended, ago: time.Minute, reported: true, loop: true, use: timerDue, reason: ReasonWatchFailing}, evFail,
			then{state: lost, loop: true, reported: true, use: timerDue, health: Degraded, ago: time.Minute}},

		// Run returns: whatever the state, it is forgotten (health is
		// left to health.stop).
		{"stop: a loss on probation is forgotten", given{state: lost, ago: 3 * time.Second, use: timerProbation, reason: ReasonWatchFailing}, evStop, then{health: Synced}},
		{"stop: a reported loop is forgotten", loopReported, evStop, then{health: Degraded}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkTransition(t, tc) })
	}
}

func checkTransition(t *testing.T, tc transition) {
	now := time.Now()
	l := givenLiveness(tc.given, now)
	defer l.stopTimer()
	tc.event(l, now)
	got := then{state: l.state, reported: l.reported, loop: l.loop, use: l.use, health: l.health.snapshot().State, reset: !l.backoff.grown}
	if !l.since.IsZero() {
		got.ago = now.Sub(l.since)
	}
	if got != tc.want {
		t.Errorf("\n got %+v\nwant %+v", got, tc.want)
	}
	if l.reported && l.health.snapshot().Reason != l.reason {
		t.Errorf("health says %q, the loss %q", l.health.snapshot().Reason, l.reason)
	}
}

// givenLiveness builds a liveness with a 10 s grace period standing where
// g says at now, after a first sync, with a backoff that has grown.
func givenLiveness(g given, now time.Time) *liveness {
	h := newHealth(now, nil)
	h.healthy(now)
	b := newBackoff(wait.Backoff{Duration: time.Second, Factor: 2, Steps: 5}, 0)
	b.next(now, 0)
	l := &liveness{grace: 10 * time.Second, health: h, backoff: b, state: g.state, reported: g.reported, loop: g.loop, reason: g.reason, err: errBoom}
	if g.state != inTouch {
		l.since = now.Add(-g.ago)
	}
	if g.use != timerOff {
		l.arm(g.use, time.Hour)
	}
	if g.reported {
		h.set(Degraded, g.reason, errBoom, now)
	}
	return l
}
