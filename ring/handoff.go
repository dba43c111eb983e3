package ring

import (
	"context"
	"fmt"
	"math/rand/v2"
)

// verify settles the claims made before v was read: a claimed bucket no
// other live member holds is opened (and its objects delivered as adds);
// one another also claims is given up by both, and this replica waits a
// random number of rounds before claiming again.
func (r *Ring) verify(st *state, v view) {
	claimed := st.held.minus(r.gate.snapshot(r.cfg.Buckets)).minus(st.releasing)
	if claimed.len() == 0 {
		return
	}
	conflict := claimed.intersect(v.othersHeld(r.lease))
	if conflict.len() > 0 {
		st.held = st.held.minus(conflict)
		st.quiet = st.round + 1 + rand.IntN(4)
		r.stat.conflicted(conflict.len())
	}
	open := claimed.minus(conflict)
	if open.len() > 0 {
		o := r.gate.open(open)
		o.replays = st.replays(open)
		r.deliver.enqueue(&r.reg, o)
		r.stat.acquired(open.len())
	}
}

// noteCached publishes which of the cache set's buckets the informers
// hold: all of them once every running informer has synced with it,
// until then what was cached before and still is in the set.
func (r *Ring) noteCached(ctx context.Context, st *state, cacheSet set) {
	now := st.cached.intersect(cacheSet)
	if r.reg.cached(ctx, cacheSet, r.cfg.RetryPeriod/4) {
		now = cacheSet
	}
	if now.equal(st.cached) {
		return
	}
	st.cached = now
	if err := r.write(ctx, st, st.held); err != nil {
		r.stat.failed(fmt.Errorf("publishing the cached buckets: %w", err))
	}
}

// release hands back the buckets of rel whose successor has them cached
// (or that no member is planned to own): stop delivering them, wait for
// the calls in progress, run the drain hook, then record the release in
// the Lease. Until recorded they stay closed, in releasing.
func (r *Ring) release(ctx context.Context, st *state, v view, owner []string, rel set) error {
	st.releasing = st.releasing.intersect(rel) // planned for this replica again: a claim once more
	ready := newSet(r.cfg.Buckets)
	for _, b := range rel.list() {
		if succ, ok := v.member(owner[b]); owner[b] == "" || ok && succ.cached.has(b) {
			ready.add(b)
		}
	}
	if ready.len() == 0 {
		return nil
	}
	st.releasing = st.releasing.union(ready)
	r.gate.close(ready)
	if r.cfg.Drain != nil {
		if sh, ok := shardOf(ready, r.cfg.Key); ok {
			if err := r.cfg.Drain(ctx, sh); err != nil {
				return fmt.Errorf("draining %s: %w (the release waits for the next round)", sh, err)
			}
		}
	}
	if err := r.write(ctx, st, st.held.minus(ready)); err != nil {
		return fmt.Errorf("recording the release of %d buckets: %w", ready.len(), err)
	}
	st.releasing = st.releasing.minus(ready)
	r.stat.released(ready.len())
	return nil
}

// claim records as held the buckets of mine that are free in v and that
// every informer has cached; they open at the next round's
// verify, after a read that follows this write.
func (r *Ring) claim(ctx context.Context, st *state, v view, mine set) {
	if st.round < st.quiet {
		return
	}
	free := mine.minus(st.held).minus(v.othersHeld(r.lease)).intersect(st.cached)
	if free.len() == 0 {
		return
	}
	if err := r.write(ctx, st, st.held.union(free)); err != nil {
		r.stat.failed(fmt.Errorf("claiming %d buckets: %w", free.len(), err))
	}
}
