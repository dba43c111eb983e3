package ring

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	handled, stopped := r.reg.handled(), r.reg.stopped()
	if st.abandoned != nil {
		handled, stopped = st.abandoned, true
	}
	r.writeLease(l, sent, published{held: held, cached: st.cached, leaving: st.leaving, ready: st.ready, supersedes: st.supersedes, handled: handled, stopped: stopped})
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
