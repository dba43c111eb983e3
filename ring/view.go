package ring

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

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
