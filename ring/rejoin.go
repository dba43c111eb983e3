package ring

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// ErrLeaseLost is wrapped by the error a replica records (Status.LastError)
// when it finds that the Lease it last wrote is no longer the one on the
// server: deleted (by hand, or by the other members once it had expired
// for twice its duration while this replica was paused or cut off),
// replaced by another object of its name, or changed by someone else. The
// replica has then stopped handling, and rejoins holding nothing.
var ErrLeaseLost = errors.New("ring: Lease lost")

// attempt is a write whose outcome is unknown: it failed, yet the server
// may have applied it (a response lost or timed out).
type attempt struct {
	lease *coordinationv1.Lease // as sent
	held  set
	sent  time.Time
}

// maxAttempts bounds the attempts remembered since the last acknowledged
// write. Forgetting one only makes a replica take its own write, should it
// have been applied, for someone else's: it rejoins needlessly.
const maxAttempts = 8

// noteSent remembers a, forgetting the oldest beyond maxAttempts.
func (st *state) noteSent(a attempt) {
	st.sent = append(st.sent, a)
	if len(st.sent) > maxAttempts {
		st.sent = st.sent[1:]
	}
}

// appliedAs returns the attempt whose outcome got, the Lease on the server,
// is: one sent to the same object and saying to the ring exactly what got
// says (same fingerprint).
func (st *state) appliedAs(got *coordinationv1.Lease) (attempt, bool) {
	fp := fingerprint(got)
	for _, a := range st.sent {
		if (a.lease.UID == "" || a.lease.UID == got.UID) && fingerprint(a.lease) == fp {
			return a, true
		}
	}
	return attempt{}, false
}

// fingerprint is what a Lease says to the ring, as one string: its ring
// label, holder, duration, renew time (to the microsecond a server keeps)
// and ring annotations.
func fingerprint(l *coordinationv1.Lease) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%q %q %d", l.Labels[LabelRing], ptr.Deref(l.Spec.HolderIdentity, ""), ptr.Deref(l.Spec.LeaseDurationSeconds, 0))
	if t := l.Spec.RenewTime; t != nil {
		b.WriteString(" " + t.UTC().Format(metav1.RFC3339Micro))
	}
	for _, k := range ringAnnotations {
		if v, ok := l.Annotations[k]; ok {
			fmt.Fprintf(&b, " %s=%q", k, v)
		}
	}
	return b.String()
}

// lost sorts out a refused write and returns the error to report: err, or
// one wrapping ErrLeaseLost and err once the Lease turns out lost (see
// judge). Refused as not found (404), the Lease is gone. Refused as a
// conflict (409: another resourceVersion or uid on the server; this is
// also how kube-apiserver refuses an update of a deleted Lease, whose uid
// precondition fails) or as already existing (a create), it reads the
// Lease to see what happened. Other errors are left to the next round (a
// server it cannot reach is what fencing is for).
func (r *Ring) lost(ctx context.Context, st *state, err error) error {
	var got *coordinationv1.Lease
	switch {
	case apierrors.IsNotFound(err):
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		l, gerr := r.cfg.Client.Leases(r.cfg.Namespace).Get(ctx, r.lease, metav1.GetOptions{})
		switch {
		case gerr == nil:
			got = l
		case !apierrors.IsNotFound(gerr):
			return fmt.Errorf("%w (reading the Lease to see why: %w)", err, gerr)
		}
	default:
		return err
	}
	if loss := r.judge(st, got); loss != nil {
		return fmt.Errorf("%w: %w", loss, err)
	}
	if st.lease == nil && st.found != nil {
		return fmt.Errorf("%w; a Lease of its name it did not write is there: it writes over it next", err)
	}
	return err
}

// checkOwn compares this replica's Lease in items, a consistent list of
// the ring read after its last write, with the one it last wrote: missing
// (deleted, or its ring label removed: a Get tells which) or at another
// version, it is judged at once. So a loss stops handling at the first
// read that can see it, not only at the next write.
func (r *Ring) checkOwn(ctx context.Context, st *state, items []coordinationv1.Lease) error {
	if st.lease == nil {
		return nil
	}
	for i := range items {
		if items[i].Name == r.lease {
			return r.judge(st, &items[i])
		}
	}
	l, err := r.cfg.Client.Leases(r.cfg.Namespace).Get(ctx, r.lease, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return r.judge(st, nil)
	case err != nil:
		return fmt.Errorf("reading Lease %s, missing from the ring's list: %w", r.lease, err)
	}
	return r.judge(st, l)
}

// judge compares got, the Lease of this replica's name on the server (nil
// if there is none), with st.lease, the one it last wrote:
//   - got is st.lease (same uid and resourceVersion): nothing happened;
//   - got is the outcome of an attempt of this replica's: that write is
//     completed (see complete);
//   - with no Lease written (none yet, or since a loss), got (or its
//     absence) is noted for the next write to write over (or create): the
//     replica holds nothing, so there is nothing to lose;
//   - otherwise the Lease is lost, and judge returns an error wrapping
//     ErrLeaseLost (see forfeit): it is gone, another object has its name,
//     or someone else changed it. Someone else's change is a loss even if
//     it looks harmless: others may have acted on it, or on any version
//     in between (nothing says how many there were), say one without the
//     ring label, which makes the member look gone.
func (r *Ring) judge(st *state, got *coordinationv1.Lease) error {
	if got != nil {
		if st.lease != nil && got.UID == st.lease.UID && got.ResourceVersion == st.lease.ResourceVersion {
			return nil
		}
		if a, ok := st.appliedAs(got); ok {
			r.complete(st, a, got)
			return nil
		}
	}
	if st.lease == nil {
		st.found = got
		return nil
	}
	return r.forfeit(st, got, lossOf(st.lease, got))
}

// lossOf says what happened to old, the Lease this replica last wrote,
// given got, the one of its name now on the server (nil if none).
func lossOf(old, got *coordinationv1.Lease) string {
	switch {
	case got == nil:
		return "was deleted (by hand, or by the other members once it had expired for twice its duration)"
	case got.UID != old.UID:
		return fmt.Sprintf("was replaced by another object of its name (uid %s, holder %q)", got.UID, ptr.Deref(got.Spec.HolderIdentity, ""))
	}
	return fmt.Sprintf("was changed by someone else (resourceVersion %s, was %s; holder %q)", got.ResourceVersion, old.ResourceVersion, ptr.Deref(got.Spec.HolderIdentity, ""))
}

// forfeit stops all handling at once, as fencing does, because the Lease
// this replica last wrote is not the one on the server: the others may
// have seen it gone or saying something else, and may already hold what
// it held. It forgets what it held and was releasing, never to publish
// them again, and says why in its Status. The next round writes over
// got, the object now of its name, or creates a new Lease if there is
// none, holding nothing and superseding the lost one (so the others lay
// its ghost to rest, see haunt); then the replica takes a share as a
// newcomer does. Its informers, and its cached and ready state, stay as
// they are: they describe its caches, which the loss did not change.
// The returned error wraps ErrLeaseLost.
func (r *Ring) forfeit(st *state, got *coordinationv1.Lease, why string) error {
	n := st.held.len()
	r.gate.shut(fullSet(r.cfg.Buckets))
	if uid := st.lease.UID; uid != "" {
		st.supersedes = string(uid)
	}
	st.lease, st.found, st.sent = nil, got, nil
	st.held, st.releasing = newSet(r.cfg.Buckets), newSet(r.cfg.Buckets)
	r.stat.lost(why)
	return fmt.Errorf("%w: %s %s; it stopped handling its %d buckets at once and rejoins holding none", ErrLeaseLost, r.lease, why, n)
}

// complete takes a, an attempt the server applied, as acknowledged: the
// Lease is got, renewed when a was sent. Of a's held buckets it keeps
// those it still holds (since a it may have fenced or given some up); a
// claim of a's beyond them is withdrawn by the next write, and never
// opened meanwhile, since verify opens only held claims.
func (r *Ring) complete(st *state, a attempt, got *coordinationv1.Lease) {
	st.lease, st.found, st.sent = got, nil, nil
	st.held = st.held.intersect(a.held)
	r.renewedAt(st, a.sent)
}
