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
	// stopped: what it releases from then on it had not been handling to
	// the end, so its successors replay the deletes since its positions.
	AnnotationStopped = "ring.kreflector.io/informers-stopped"
)

// member is one Lease of the ring as read, and what it says.
type member struct {
	name string // the Lease's name
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
}

// counts says whether the plan gives m a share.
func (m member) counts() bool { return m.ready && !m.leaving }

// readMember decodes a ring Lease of a ring of n buckets.
func readMember(l *coordinationv1.Lease, n int) (member, error) {
	m := member{name: l.Name, rv: l.ResourceVersion, duration: time.Duration(ptr.Deref(l.Spec.LeaseDurationSeconds, 0)) * time.Second}
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
	return m, nil
}

// published is what a member says of itself in its Lease.
type published struct {
	held, cached   set
	leaving, ready bool
	handled        positions
	stopped        bool
}

// writeLease sets on l what this member publishes: identity, duration,
// renew time, held and cached buckets, whether it is ready and whether
// it is leaving.
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
	if p.leaving {
		l.Annotations[AnnotationLeaving] = "true"
	}
	if p.ready {
		l.Annotations[AnnotationReady] = "true"
	}
	if len(p.handled) > 0 {
		l.Annotations[AnnotationHandled] = p.handled.encode()
	}
	if p.stopped {
		l.Annotations[AnnotationStopped] = "true"
	}
	l.Spec.HolderIdentity = ptr.To(r.cfg.Identity)
	l.Spec.LeaseDurationSeconds = ptr.To(int32(r.cfg.LeaseDuration / time.Second))
	t := metav1.NewMicroTime(now)
	if l.Spec.AcquireTime == nil {
		l.Spec.AcquireTime = &t
	}
	l.Spec.RenewTime = &t
}

// observer tells live Leases from expired ones the way client-go's leader
// election does: by when this replica last saw a Lease change (its
// resourceVersion or renew time), on its own clock, never by the renew time written on
// another machine's clock. A Lease unchanged for its duration has expired.
type observer struct {
	seen map[string]sighting
}

type sighting struct {
	version string
	at      time.Time
}

// see records the Leases of one read at time now and forgets the others.
func (o *observer) see(now time.Time, ms []member) {
	next := make(map[string]sighting, len(ms))
	for _, m := range ms {
		s, ok := o.seen[m.name]
		if !ok || s.version != m.version {
			s = sighting{version: m.version, at: now}
		}
		next[m.name] = s
	}
	o.seen = next
}

// expired says whether m has not changed for its lease duration.
func (o *observer) expired(now time.Time, m member) bool {
	s, ok := o.seen[m.name]
	return ok && now.Sub(s.at) > m.duration
}

// untilExpiry returns how long until the first of the live members other
// than me expires if it does not change meanwhile, or false if there is
// none.
func (o *observer) untilExpiry(now time.Time, live []member, me string) (time.Duration, bool) {
	var first time.Duration
	found := false
	for _, m := range live {
		if m.name == me {
			continue
		}
		left := o.seen[m.name].at.Add(m.duration).Sub(now)
		if !found || left < first {
			first, found = left, true
		}
	}
	return first, found
}

// since returns how long ago m last changed.
func (o *observer) since(now time.Time, m member) time.Duration {
	return now.Sub(o.seen[m.name].at)
}
