package ring

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// write publishes held, with the cached buckets and whether it is
// leaving, in this replica's Lease: over the one it last wrote, else over
// the one of its name it found (see forfeit), else in a new one. On
// success the Lease counts as renewed from the moment the request was
// sent, and the fencing deadline moves. A refused write is sorted out by
// lost before write returns: its error wraps ErrLeaseLost if the Lease
// turns out lost, and handling has stopped by then.
func (r *Ring) write(ctx context.Context, st *state, held set) error {
	sent := r.cfg.Clock.Now()
	leases := r.cfg.Client.Leases(r.cfg.Namespace)
	base := st.lease
	if base == nil {
		base = st.found
	}
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: r.lease, Namespace: r.cfg.Namespace}}
	if base != nil {
		l = base.DeepCopy()
	}
	r.writeLease(l, sent, published{held: held, cached: st.cached, leaving: st.leaving, ready: st.ready, supersedes: st.supersedes, handled: r.reg.handled(), stopped: r.reg.stopped()})
	var got *coordinationv1.Lease
	var err error
	if base == nil {
		got, err = leases.Create(ctx, l, metav1.CreateOptions{})
	} else {
		got, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	}
	if err != nil {
		st.noteSent(attempt{lease: l, held: held.clone(), sent: sent})
		return r.lost(ctx, st, err)
	}
	st.lease, st.found, st.sent, st.held = got, nil, nil, held.clone()
	r.renewedAt(st, sent)
	return nil
}

// renewedAt moves the renew time, and the fencing deadline, to sent.
func (r *Ring) renewedAt(st *state, sent time.Time) {
	if sent.After(st.renewed) {
		st.renewed = sent
		r.gate.fenceAt(sent.Add(r.cfg.RenewDeadline))
		r.fence.arm(sent.Add(r.cfg.RenewDeadline))
	}
}

// view is one consistent read of the ring.
type view struct {
	buckets int
	// live are the members whose Leases have not expired, this one
	// included; order is by Lease name.
	live []member
	// gone are the members whose Leases have expired.
	gone []member
	// ghosts are Leases that vanished while live (see haunt), each
	// holding every bucket, as no member.
	ghosts []member
}

// read lists the ring's Leases (a consistent read) and keeps the live
// ones; it deletes Leases expired for twice their duration, left behind by
// replicas that died. If the list shows that this replica's Lease is not
// the one it last wrote, read returns an error wrapping ErrLeaseLost,
// handling stopped (see checkOwn).
func (r *Ring) read(ctx context.Context, st *state) (view, error) {
	sel := labels.SelectorFromSet(labels.Set{LabelRing: r.cfg.Name}).String()
	list, err := r.cfg.Client.Leases(r.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return view{}, fmt.Errorf("listing the ring's Leases: %w", err)
	}
	if err := r.checkOwn(ctx, st, list.Items); err != nil {
		return view{}, err
	}
	now := r.cfg.Clock.Now()
	v := view{buckets: r.cfg.Buckets}
	var all []member
	for i := range list.Items {
		m, err := readMember(&list.Items[i], r.cfg.Buckets)
		if err != nil {
			return view{}, err
		}
		all = append(all, m)
	}
	st.obs.see(now, all, r.lease)
	v.ghosts = st.obs.ghostMembers(r.cfg.Buckets)
	for _, m := range all {
		switch {
		case !st.obs.expired(now, m):
			v.live = append(v.live, m)
		case st.obs.since(now, m) > 2*m.duration && m.name != r.lease:
			r.collect(ctx, m)
			fallthrough
		default:
			v.gone = append(v.gone, m)
		}
	}
	slices.SortFunc(v.live, func(a, b member) int { return compareStrings(a.name, b.name) })
	return v, nil
}

// collect deletes a long-expired Lease, only if it is still the version
// seen expired.
func (r *Ring) collect(ctx context.Context, m member) {
	err := r.cfg.Client.Leases(r.cfg.Namespace).Delete(ctx, m.name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &m.rv}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		r.stat.failed(fmt.Errorf("deleting expired Lease %s: %w", m.name, err))
	}
}

// othersHeld is the union of what the live members other than me hold,
// and the ghosts.
func (v view) othersHeld(me string) set {
	s := newSet(v.buckets)
	for _, m := range v.live {
		if m.name != me {
			s = s.union(m.held)
		}
	}
	for _, g := range v.ghosts {
		s = s.union(g.held)
	}
	return s
}

// plan plans the ring from v and returns each bucket's owner; mine is
// what this replica holds now (newer than its Lease in v if it wrote
// since). The ready members count; a replica not ready yet plans as if
// every member that is not leaving were (itself included), which gives
// it the share it will have once they are, to cache meanwhile: replicas
// starting together each cache their own share, not everything.
func (v view) plan(me string, mine set, ready bool) []string {
	var members []string
	held := make([]string, v.buckets)
	for _, m := range v.live {
		if m.counts() || !m.leaving && (m.name == me || !ready) {
			members = append(members, m.name)
		}
		h := m.held
		if m.name == me {
			h = mine
		}
		for _, b := range h.list() {
			held[b] = m.name
		}
	}
	return plan(members, held)
}

// ownedBy is the set of buckets owner gives to m.
func ownedBy(owner []string, m string) set {
	s := newSet(len(owner))
	for b, o := range owner {
		if o == m {
			s.add(b)
		}
	}
	return s
}

// member returns the live member named name.
func (v view) member(name string) (member, bool) {
	for _, m := range v.live {
		if m.name == name {
			return m, true
		}
	}
	return member{}, false
}

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

// leave hands everything over before going: it marks its Lease leaving
// (the others plan without it and cache its buckets), runs rounds that
// release each bucket once its successor has it cached, and after half of
// RenewDeadline releases what is left regardless; then it records that it
// holds nothing and deletes its Lease. All within RenewDeadline. Without
// a Lease (none written yet, or lost and none of its name found since)
// there is nothing to hand over: it holds nothing.
func (r *Ring) leave(st *state) error {
	if st.lease == nil && st.found == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.RenewDeadline)
	defer cancel()
	st.leaving = true
	handover, stop := context.WithTimeout(ctx, r.cfg.RenewDeadline/2)
	if err := r.write(handover, st, st.held); err != nil {
		r.stat.failed(fmt.Errorf("announcing the leave: %w", err))
	}
	for handover.Err() == nil && st.held.len() > 0 {
		r.round(handover, st)
		t := r.cfg.Clock.NewTimer(r.cfg.RetryPeriod / 4)
		select {
		case <-handover.Done():
		case <-t.C():
		}
		t.Stop()
	}
	stop()
	r.gate.close(fullSet(r.cfg.Buckets))
	if r.cfg.Drain != nil && st.held.len() > 0 {
		if sh, ok := shardOf(st.held, r.cfg.Key); ok {
			_ = r.cfg.Drain(ctx, sh)
		}
	}
	if err := r.write(ctx, st, newSet(r.cfg.Buckets)); err != nil {
		r.stat.failed(fmt.Errorf("leaving: %w; others take over when the Lease expires", err))
		return nil
	}
	err := r.cfg.Client.Leases(r.cfg.Namespace).Delete(ctx, r.lease, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		r.stat.failed(fmt.Errorf("deleting Lease %s on leaving: %w", r.lease, err))
	}
	r.stat.left()
	return nil
}
