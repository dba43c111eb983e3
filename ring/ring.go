package ring

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/klog/v2"

	"github.com/kreflector/cache/shard"
)

// Ring is one replica's membership of a ring: it holds a Lease of its own,
// reads the others', plans which buckets of the hash space it owns, hands
// buckets over (release, then acquire) and gates its informers' handlers so
// that an object is handled by at most one replica at any instant.
//
// Make one with New, build informers with NewInformer (before or after
// Run), and call Run (or Start, as a controller-runtime Runnable) once.
// Its methods are safe for concurrent use.
type Ring struct {
	cfg   Config
	lease string
	gate  *gate
	reg   registry
	stat  statusBox
	ran   atomic.Bool
	// fence and deliver are started by Run, before the first write.
	fence   *fencer
	deliver *deliverer
}

// New checks cfg and returns a ring member that has not joined yet.
func New(cfg Config) (*Ring, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	r := &Ring{cfg: c, lease: leaseName(c.Name, c.Identity)}
	r.gate = newGate(c.Buckets, c.Clock.Now, r.tell)
	r.reg.ring = r
	r.stat.init(r.lease, c.Identity)
	return r, nil
}

// tell passes a gate change on to Config.OnHandlingChange.
func (r *Ring) tell(opened bool, s set) {
	if r.cfg.OnHandlingChange == nil {
		return
	}
	if sh, ok := shardOf(s, r.cfg.Key); ok {
		r.cfg.OnHandlingChange(opened, sh)
	}
}

// Handling returns the buckets this replica handles now as a shard, or
// false if it handles none.
func (r *Ring) Handling() (shard.Shard, bool) {
	return shardOf(r.gate.snapshot(r.cfg.Buckets), r.cfg.Key)
}

// LeaseName is the name of this replica's Lease.
func (r *Ring) LeaseName() string { return r.lease }

// state is what the loop owns; nothing else reads or writes it.
type state struct {
	// lease is this replica's Lease as last written: nil before the
	// first write and after a loss (see forfeit).
	lease *coordinationv1.Lease
	// found, when lease is nil, is a Lease of this replica's name that it
	// did not write (a replacement, its own changed by someone else, or
	// one there before its first create): the next write writes over it.
	found *coordinationv1.Lease
	// sent are the failed writes since the last acknowledged one: the
	// server may have applied one of them (see appliedAs).
	sent []attempt
	// supersedes is the uid of the last Lease this replica lost, said in
	// the ones it writes since (AnnotationSupersedes).
	supersedes string
	held       set // the buckets published as held
	// releasing are held buckets whose gate is closed for a release not
	// yet recorded: not claims, and never reopened by verify.
	releasing set
	// cached is what the informers were last seen to hold, as published.
	cached set
	// leaving is set once Run's context has ended; ready once the
	// informers have cached this replica's share.
	leaving, ready bool
	// renewed is when the last successful write was sent; zero before.
	renewed time.Time
	obs     observer
	// quiet is the round before which no new claim is made, after a
	// conflict.
	quiet int
	round int
	// from is, by bucket, the last other member seen holding it, with
	// the positions it published (see replays).
	from map[int]*holder
	// abandoned, once set (leave's forced release), are the positions
	// published from then on, with the member marked stopped: what it
	// lets go then its successors may not have cached, so they replay the
	// deletes since.
	abandoned positions
	// calls logs the failures of the rounds' Lease writes and reads.
	calls roundLog
}

func (r *Ring) newState() *state {
	n := r.cfg.Buckets
	return &state{held: newSet(n), releasing: newSet(n), cached: newSet(n), from: map[int]*holder{}}
}

// Run joins the ring and keeps this replica's membership until ctx ends,
// then leaves gracefully (see leave), within RenewDeadline. It returns nil
// after leaving, or an error if it was called before.
func (r *Ring) Run(ctx context.Context) error {
	if !r.ran.CompareAndSwap(false, true) {
		return errors.New("ring: Run called twice")
	}
	r.stat.update(func(s *Status) { s.Started = true })
	st := r.newState()
	st.calls = roundLog{logger: klog.FromContext(ctx).WithValues("ring", r.cfg.Name, "lease", r.lease), clock: r.cfg.Clock}
	r.fence = startFencer(r.cfg.Clock, func() {
		r.gate.shut(fullSet(r.cfg.Buckets))
		r.stat.fenced()
	})
	defer r.fence.stop()
	r.deliver = startDeliverer(&r.reg)
	defer r.deliver.stop()
	r.loop(ctx, st)
	return r.leave(st)
}

// loop runs rounds until ctx ends.
func (r *Ring) loop(ctx context.Context, st *state) {
	for ctx.Err() == nil {
		wait := r.round(ctx, st)
		t := r.cfg.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-t.C():
		}
		t.Stop()
	}
}

// Start is Run, under controller-runtime's Runnable name.
func (r *Ring) Start(ctx context.Context) error { return r.Run(ctx) }

// NeedLeaderElection is false: every replica runs its ring membership
// (controller-runtime's LeaderElectionRunnable).
func (r *Ring) NeedLeaderElection() bool { return false }

// round is one pass of the loop: renew, read, verify claims, plan,
// cache, release what successors have cached, claim. It returns how long
// to wait before the next.
func (r *Ring) round(ctx context.Context, st *state) time.Duration {
	st.round++
	r.fenceIfLate(st)
	r.reg.mark()
	outer := ctx
	ctx, cancel := context.WithDeadline(ctx, r.callDeadline(st))
	defer cancel()
	if st.lease == nil || r.cfg.Clock.Since(st.renewed) >= r.cfg.RetryPeriod {
		if err := r.write(ctx, st, st.held); err != nil {
			return r.roundFailed(outer, st, fmt.Errorf("renewing Lease %s: %w", r.lease, err))
		}
	}
	v, err := r.read(ctx, st)
	if err != nil {
		return r.roundFailed(outer, st, err)
	}
	st.calls.succeeded()
	r.stat.readRing()
	st.noteHolders(v, r.lease)
	r.verify(st, v)
	owner := v.plan(r.lease, st.held, st.ready)
	mine := ownedBy(owner, r.lease)
	r.reg.setCache(mine.union(st.held))
	r.gate.setPending(mine)
	r.reg.prune()
	r.noteCached(ctx, st, mine.union(st.held))
	if st.ready {
		if err := r.release(ctx, st, v, owner, st.held.minus(mine)); err != nil {
			r.stat.failed(err)
		}
		r.claim(ctx, st, v, mine)
	} else {
		r.becomeReady(ctx, st, mine) // claims wait for a plan that counts it
	}
	r.reg.setCache(mine.union(st.held))
	open := r.gate.snapshot(r.cfg.Buckets)
	r.stat.observed(v, r.lease, mine, open, r.reg.filtering())
	wait := r.cfg.RetryPeriod
	if !mine.equal(st.held) || !st.held.equal(open) {
		wait = r.cfg.RetryPeriod / 4
	}
	// Look again just after a silent member's Lease would expire, so a
	// dead member's buckets are taken over without waiting out a period.
	if left, ok := st.obs.untilExpiry(r.cfg.Clock.Now(), v.live, r.lease); ok && left+expiryMargin < wait {
		wait = max(left+expiryMargin, expiryMargin)
	}
	return wait
}

// roundFailed records err, the failure of the round's Lease write or
// read, and logs it (rate-limited, see roundLog) unless ctx, the round's
// own, ended: then the replica is leaving, and the failure is no news.
// It returns how long to wait before the next round.
func (r *Ring) roundFailed(ctx context.Context, st *state, err error) time.Duration {
	r.stat.failed(err)
	if ctx.Err() == nil {
		st.calls.failed(err)
	}
	return r.retryAfter(st, err)
}

// retryAfter is how long to wait after a round failed with err: a
// quarter of RetryPeriod if the Lease was lost or a Lease of its name
// found (the next write rejoins), else RetryPeriod.
func (r *Ring) retryAfter(st *state, err error) time.Duration {
	if errors.Is(err, ErrLeaseLost) || st.lease == nil && st.found != nil {
		return r.cfg.RetryPeriod / 4
	}
	return r.cfg.RetryPeriod
}

// expiryMargin is how long after a Lease's expected expiry the loop looks.
const expiryMargin = 50 * time.Millisecond

// becomeReady makes this replica ready, and says so in its Lease, once
// its informers hold the share it plans for itself. Until then it neither
// claims nor is planned for by the others.
func (r *Ring) becomeReady(ctx context.Context, st *state, mine set) {
	if mine.len() == 0 || !mine.minus(st.cached).isEmpty() {
		return
	}
	st.ready = true
	if err := r.write(ctx, st, st.held); err != nil {
		st.ready = false
		r.stat.failed(fmt.Errorf("announcing readiness: %w", err))
		return
	}
	r.stat.update(func(s *Status) { s.Ready = true })
}

// fenceIfLate stops all handling once the last successful renew is
// RenewDeadline old: from then on others may, LeaseDuration after they saw
// it, take this replica's buckets.
func (r *Ring) fenceIfLate(st *state) {
	if st.renewed.IsZero() || r.cfg.Clock.Since(st.renewed) < r.cfg.RenewDeadline {
		return
	}
	if st.held.len() > 0 {
		r.gate.shut(st.held)
		r.stat.fenced()
	}
	st.held, st.releasing = newSet(r.cfg.Buckets), newSet(r.cfg.Buckets)
}

// callDeadline bounds this round's API calls: no call may outlast the
// renew deadline, so a call stuck in the network cannot delay fencing.
func (r *Ring) callDeadline(st *state) time.Time {
	if st.renewed.IsZero() || st.held.len() == 0 {
		return r.cfg.Clock.Now().Add(r.cfg.RenewDeadline)
	}
	return st.renewed.Add(r.cfg.RenewDeadline)
}
