package ring

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrNotFormed wraps WaitForSync's error while this replica does not yet
// handle all the buckets the ring plans for it.
var ErrNotFormed = errors.New("ring not formed")

// Status is what a replica knows of its ring, for health reports.
type Status struct {
	// Lease is this replica's Lease; Identity its holder identity.
	Lease, Identity string
	// Started is set once Run (or Start) has been called. Until then the
	// replica never reads the ring, and its informers never start.
	Started bool
	// Members is the number of live, non-leaving members in the last read
	// (0 before the first).
	Members int
	// Buckets is the ring's bucket count; Planned how many the plan gives
	// this replica; Handling how many it handles now (the gate is open).
	Buckets, Planned, Handling int
	// Waiting names the members still holding buckets planned for this
	// replica, with how many each. A Lease that vanished while live
	// (deleted, its label removed, replaced: see ErrLeaseLost) holds back
	// every claim until it would have expired or its holder has rejoined:
	// it is named with " (vanished)" after it, with the planned buckets
	// not handled yet.
	Waiting map[string]int
	// Ready is set once this replica's informers have cached its share:
	// until then the others do not plan for it (see AnnotationReady).
	Ready bool
	// Fenced is set when this replica stopped handling because it could
	// not renew within RenewDeadline; cleared at the next renew.
	Fenced bool
	// Released, Acquired and Conflicts count buckets handed over, taken
	// and given up on a simultaneous claim, since Run began.
	Released, Acquired, Conflicts int
	// Replayed counts the deletes handed to handlers on taking buckets
	// over from a holder that had stopped handling them before letting
	// them go (it died, was cut off or paused, its informers stopped, or
	// it left before this replica had them cached):
	// deletes made while no handler had the buckets, replayed from the
	// watch history from the position the holder last published.
	// Unreplayed counts the buckets taken over whose deletes could not be
	// replayed (the history was compacted, the watch failed): deletes made
	// meanwhile may have reached no handler. LastError says why.
	Replayed, Unreplayed int
	// FilteringLocally counts the ring's informers whose server ignores
	// shard selectors (kube-apiserver without the ShardedListAndWatch
	// gate): they receive and decode every object and keep only those of
	// the buckets they cache. Handling is exact all the same; only the
	// network and decoding savings are lost. An informer counts once it
	// has seen it: a LIST without its selector's echo, or objects outside
	// its shard (one whose shard only shrank since its last LIST finds out
	// from the first events it must drop).
	FilteringLocally int
	// LastError is the last error of a ring call or of a drain, with when.
	LastError   error
	LastErrorAt time.Time
	// failing says whether LastError is current: no round has written
	// the Lease and read the ring since (see Err).
	failing bool
	// Left is set once the replica has left the ring.
	Left bool
	// Rejoins counts the times this replica found its Lease lost (see
	// ErrLeaseLost), stopped handling at once and rejoined holding
	// nothing. Rejoining says what happened to the Lease ("was deleted
	// …", "was replaced …", "was changed by someone else …") from then
	// until the replica handles what the ring plans for it again; empty
	// otherwise.
	Rejoins   int
	Rejoining string
}

// Formed says whether this replica handles exactly what the ring plans.
func (s Status) Formed() bool { return s.Rejoining == "" && s.settled() }

// settled is Formed but for a rejoin in progress.
func (s Status) settled() bool {
	return s.Members > 0 && s.Ready && !s.Fenced && s.Planned == s.Handling && len(s.Waiting) == 0
}

// String says in one line how the replica stands and, if it is not
// formed, why.
func (s Status) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ring member %s: %d members, handling %d of %d planned buckets", s.Lease, s.Members, s.Handling, s.Planned)
	if s.Buckets > 0 { // known from the first read on
		fmt.Fprintf(&b, " (of %d)", s.Buckets)
	}
	switch {
	case s.Left:
		b.WriteString("; left the ring")
	case s.Rejoining != "":
		fmt.Fprintf(&b, "; rejoining after its Lease %s: it stopped handling, and takes a share again as a newcomer (rejoin %d)", s.Rejoining, s.Rejoins)
	case !s.Started:
		b.WriteString("; Ring.Run has not been called: it never reads the ring, and its informers wait for it")
	case s.Members == 0:
		b.WriteString("; has not read the ring yet")
	case !s.Ready:
		b.WriteString("; not ready: its informers have not cached its share yet, so the others do not plan for it")
	case s.Fenced:
		b.WriteString("; fenced: could not renew its Lease within the renew deadline")
	}
	if s.Unreplayed > 0 {
		fmt.Fprintf(&b, "; %d buckets taken over without the deletes made while no one handled them (see the last error)", s.Unreplayed)
	}
	if s.FilteringLocally > 0 {
		fmt.Fprintf(&b, "; %d informers filter locally: the server ignores shard selectors (ShardedListAndWatch off)", s.FilteringLocally)
	}
	for _, m := range sortedKeys(s.Waiting) {
		fmt.Fprintf(&b, "; waiting for %s to release %d buckets", m, s.Waiting[m])
	}
	if s.LastError != nil {
		fmt.Fprintf(&b, "; last error: %v", s.LastError)
	}
	return b.String()
}

// Err is nil when the replica is formed; otherwise an error that reads
// "ring not formed: " and String, wrapping ErrNotFormed and, while it is
// current (no round has written the Lease and read the ring since it),
// LastError: apierrors.IsForbidden tells a replica whose Leases are
// forbidden, and not one that was once and waits for a member now.
func (s Status) Err() error {
	if s.Formed() {
		return nil
	}
	return &notFormedError{s: s}
}

// notFormedError is Status.Err's error.
type notFormedError struct{ s Status }

func (e *notFormedError) Error() string { return ErrNotFormed.Error() + ": " + e.s.String() }

func (e *notFormedError) Unwrap() []error {
	if e.s.LastError == nil || !e.s.failing {
		return []error{ErrNotFormed}
	}
	return []error{ErrNotFormed, e.s.LastError}
}

// Status returns the replica's standing.
func (r *Ring) Status() Status { return r.stat.get() }

// WaitForSync blocks until this replica handles all the buckets the ring
// plans for it (nil) or ctx ends: the error then is Status.Err's (it
// wraps ErrNotFormed and the last error, and says why) wrapping ctx's
// error too.
func (r *Ring) WaitForSync(ctx context.Context) error {
	for {
		s, changed := r.stat.watch()
		if s.Formed() {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", s.Err(), ctx.Err())
		}
	}
}
