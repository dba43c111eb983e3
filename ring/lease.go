package ring

import (
	"fmt"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// What a member's Lease carries beyond coordination.k8s.io/v1's spec.
const (
	// LabelRing names the ring a Lease is a member of; members list the
	// ring by it.
	LabelRing = "ring.kreflector.io/name"
	// AnnotationHeld is the set of buckets whose handling right the
	// member holds, hex, bucket 0 first (see set.encode).
	AnnotationHeld = "ring.kreflector.io/held"
	// AnnotationBuckets is the ring's bucket count; members of one ring
	// must agree on it.
	AnnotationBuckets = "ring.kreflector.io/buckets"
	// AnnotationCached is the set of buckets the member's informers have
	// cached: an owner hands a bucket over only once its successor has it
	// cached, so that no change of the bucket's objects (a delete above
	// all) falls between the two caches.
	AnnotationCached = "ring.kreflector.io/cached"
	// AnnotationReady marks a member whose informers have cached its
	// share once: only ready members are planned for, so that a replica
	// that cannot cache (it may not list, say) never takes buckets it
	// could not handle.
	AnnotationReady = "ring.kreflector.io/ready"
	// AnnotationLeaving marks a member on its way out: it counts for no
	// quota, and what it still holds is released before its Lease goes.
	AnnotationLeaving = "ring.kreflector.io/leaving"
	// AnnotationHandled says, by informer type, the resourceVersion up to
	// which the member's handlers have been handed every change ("type=rv"
	// pairs; see positions.encode). A member taking its buckets over after
	// it stopped handling them (it died, was cut off or paused, or its
	// informers stopped first) replays the deletes made since.
	AnnotationHandled = "ring.kreflector.io/handled"
	// AnnotationStopped marks a member some of whose informers have
	// stopped, or one leaving that released buckets before their
	// successors had them cached: what it releases from then on it had
	// not been handling to the end, so its successors replay the deletes
	// since its positions.
	AnnotationStopped = "ring.kreflector.io/informers-stopped"
	// AnnotationSupersedes is the uid of a Lease of the same name that
	// the member lost (deleted, replaced or changed behind its back; see
	// ErrLeaseLost): it stopped handling through that Lease before
	// writing this one, so the others may forget what that one held.
	AnnotationSupersedes = "ring.kreflector.io/supersedes"
)

// ringAnnotations are the annotations a member writes.
var ringAnnotations = []string{AnnotationBuckets, AnnotationHeld, AnnotationCached, AnnotationReady, AnnotationLeaving, AnnotationSupersedes, AnnotationHandled, AnnotationStopped}

// member is one Lease of the ring as read, and what it says.
type member struct {
	name string // the Lease's name
	uid  string // the Lease's uid: one re-created under the name has another
	// version tells one write of the Lease from another: its
	// resourceVersion and renew time.
	version  string
	rv       string
	held     set
	cached   set
	leaving  bool
	ready    bool
	duration time.Duration
	// handled is what its AnnotationHandled says (empty if unreadable:
	// a position is a help, not a promise).
	handled positions
	stopped bool
	// supersedes is the uid of the Lease of its name it replaced after
	// losing it (AnnotationSupersedes), if any.
	supersedes string
}

// counts says whether the plan gives m a share.
func (m member) counts() bool { return m.ready && !m.leaving }

// readMember decodes a ring Lease of a ring of n buckets.
func readMember(l *coordinationv1.Lease, n int) (member, error) {
	m := member{name: l.Name, uid: string(l.UID), rv: l.ResourceVersion, duration: time.Duration(ptr.Deref(l.Spec.LeaseDurationSeconds, 0)) * time.Second}
	m.version = l.ResourceVersion
	if t := l.Spec.RenewTime; t != nil {
		m.version += "@" + t.UTC().Format(time.RFC3339Nano)
	}
	if got := l.Annotations[AnnotationBuckets]; got != strconv.Itoa(n) {
		return m, fmt.Errorf("%w: Lease %s has %s=%q, this replica uses %d", ErrMisconfigured, l.Name, AnnotationBuckets, got, n)
	}
	held, err := decodeSet(l.Annotations[AnnotationHeld], n)
	if err != nil {
		return m, fmt.Errorf("%w: Lease %s: %w", ErrMisconfigured, l.Name, err)
	}
	m.held = held
	m.cached = newSet(n)
	if text, ok := l.Annotations[AnnotationCached]; ok {
		if m.cached, err = decodeSet(text, n); err != nil {
			return m, fmt.Errorf("%w: Lease %s: %w", ErrMisconfigured, l.Name, err)
		}
	}
	m.leaving = l.Annotations[AnnotationLeaving] == "true"
	m.ready = l.Annotations[AnnotationReady] == "true"
	m.stopped = l.Annotations[AnnotationStopped] == "true"
	if m.handled, err = decodePositions(l.Annotations[AnnotationHandled]); err != nil {
		m.handled = positions{}
	}
	m.supersedes = l.Annotations[AnnotationSupersedes]
	return m, nil
}

// published is what a member says of itself in its Lease.
type published struct {
	held, cached   set
	leaving, ready bool
	handled        positions
	stopped        bool
	supersedes     string // the uid of the last Lease it lost, if any
}

// writeLease sets on l what this member publishes: identity, duration,
// renew time, held and cached buckets, whether it is ready and whether
// it is leaving, and which lost Lease it supersedes. It overwrites (or
// removes) every ring label and annotation, whoever wrote l before: a
// Lease taken back after a loss says only what this replica says.
func (r *Ring) writeLease(l *coordinationv1.Lease, now time.Time, p published) {
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Labels[LabelRing] = r.cfg.Name
	l.Annotations[AnnotationBuckets] = strconv.Itoa(r.cfg.Buckets)
	l.Annotations[AnnotationHeld] = p.held.encode()
	l.Annotations[AnnotationCached] = p.cached.encode()
	setOrDelete(l.Annotations, AnnotationLeaving, p.leaving, "true")
	setOrDelete(l.Annotations, AnnotationReady, p.ready, "true")
	setOrDelete(l.Annotations, AnnotationSupersedes, p.supersedes != "", p.supersedes)
	setOrDelete(l.Annotations, AnnotationHandled, len(p.handled) > 0, p.handled.encode())
	setOrDelete(l.Annotations, AnnotationStopped, p.stopped, "true")
	l.Spec.HolderIdentity = ptr.To(r.cfg.Identity)
	l.Spec.LeaseDurationSeconds = ptr.To(int32(r.cfg.LeaseDuration / time.Second))
	t := metav1.NewMicroTime(now)
	if l.Spec.AcquireTime == nil {
		l.Spec.AcquireTime = &t
	}
	l.Spec.RenewTime = &t
}

// setOrDelete sets m[k] to v if set is true, else deletes k.
func setOrDelete(m map[string]string, k string, set bool, v string) {
	if set {
		m[k] = v
	} else {
		delete(m, k)
	}
}

// observer tells live Leases from expired ones the way client-go's leader
// election does: by when this replica last saw a Lease change (its
// resourceVersion or renew time), on its own clock, never by the renew time written on
// another machine's clock. A Lease unchanged for its duration has expired.
// It also keeps the ghosts of Leases that vanished while live (see haunt).
type observer struct {
	seen   map[string]sighting
	ghosts []ghost
}

// sighting is a Lease as last read, and when it was first read so.
type sighting struct {
	version string
	at      time.Time
	m       member
}

// see records the Leases of one read at time now, keeps as ghosts those
// that vanished while live (me, this replica's own, excepted), and
// forgets the others.
func (o *observer) see(now time.Time, ms []member, me string) {
	next := make(map[string]sighting, len(ms))
	for _, m := range ms {
		s, ok := o.seen[m.name]
		if !ok || s.version != m.version {
			s = sighting{version: m.version, at: now}
		}
		s.m = m
		next[m.name] = s
	}
	o.haunt(now, next, me)
	o.seen = next
}

// expired says whether m has not changed for its lease duration.
func (o *observer) expired(now time.Time, m member) bool {
	s, ok := o.seen[m.name]
	return ok && now.Sub(s.at) > m.duration
}

// untilExpiry returns how long until the first of the live members other
// than me, or of the ghosts, expires if it does not change meanwhile, or
// false if there is none.
func (o *observer) untilExpiry(now time.Time, live []member, me string) (time.Duration, bool) {
	var first time.Duration
	found := false
	note := func(s sighting, d time.Duration) {
		if left := s.at.Add(d).Sub(now); !found || left < first {
			first, found = left, true
		}
	}
	for _, m := range live {
		if m.name != me {
			note(o.seen[m.name], m.duration)
		}
	}
	for _, g := range o.ghosts {
		note(sighting{at: g.at}, g.duration)
	}
	return first, found
}

// since returns how long ago m last changed.
func (o *observer) since(now time.Time, m member) time.Duration {
	return now.Sub(o.seen[m.name].at)
}
