package ring

import (
	"slices"
	"time"
)

// A ghost is a Lease that vanished from the ring's list while live and
// not leaving: it was deleted, its ring label was removed, or another
// object took its name. Its holder may not know yet, and may still be
// handling buckets: it learns of the loss at its next write or read (see
// ErrLeaseLost), or fences itself at its renew deadline if it cannot
// reach the server. Which buckets it handles, nobody else can tell: it
// may have claimed and opened buckets in versions of its Lease this
// replica never read. So while a ghost stays, it counts as holding every
// bucket: no claim is made or verified. It stays until its Lease would
// have expired had it stayed unchanged since this replica noticed it
// vanish (its holder cannot have renewed it since), or until a Lease of
// its name is the same object again (its label restored, say) or one
// that supersedes it (AnnotationSupersedes: its holder has stopped
// handling through it and rejoined).
//
// A Lease last seen leaving is no ghost: a leaving member claims nothing
// and deletes its Lease once it has closed its gate and recorded that it
// holds nothing. Neither is an expired one: its holder has fenced itself.

// ghost is a vanished Lease: its name and uid, its duration, and when
// this replica noticed it vanish.
type ghost struct {
	name, uid string
	duration  time.Duration
	at        time.Time
}

// haunt turns into ghosts the Leases of the last read (o.seen) that next,
// this read at now, lacks or shows as another object, if they were live
// and not leaving; and lays to rest the ghosts expired at now or
// superseded in next. me, this replica's own Lease, is never one.
func (o *observer) haunt(now time.Time, next map[string]sighting, me string) {
	for name, s := range o.seen {
		if cur, ok := next[name]; name == me || ok && cur.m.uid == s.m.uid {
			continue
		}
		if !s.m.leaving && now.Sub(s.at) <= s.m.duration {
			o.ghosts = append(o.ghosts, ghost{name: name, uid: s.m.uid, duration: s.m.duration, at: now})
		}
	}
	o.ghosts = slices.DeleteFunc(o.ghosts, func(g ghost) bool {
		cur, ok := next[g.name]
		return now.Sub(g.at) > g.duration || ok && (cur.m.uid == g.uid || cur.m.supersedes == g.uid)
	})
	slices.SortFunc(o.ghosts, func(a, b ghost) int { return compareStrings(a.name+"/"+a.uid, b.name+"/"+b.uid) })
}

// ghostMembers returns the ghosts as members holding all n buckets.
func (o *observer) ghostMembers(n int) []member {
	ms := make([]member, 0, len(o.ghosts))
	for _, g := range o.ghosts {
		ms = append(ms, member{name: g.name, uid: g.uid, held: fullSet(n), duration: g.duration})
	}
	return ms
}
