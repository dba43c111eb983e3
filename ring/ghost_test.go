package ring

import (
	"testing"
	"time"
)

// A Lease that vanishes while live, or comes back as another object,
// holds back every claim until it would have expired, counted from when
// it was seen to vanish, or until a Lease of its name is the same object
// again or supersedes it. One last seen leaving or expired does not.
func TestAVanishedLeaseHoldsBackEveryClaim(t *testing.T) {
	const n = 16
	t0 := time.Now()
	m := func(name, uid, version string) member {
		return member{name: name, uid: uid, version: version, held: setOf(n, 1), duration: 15 * time.Second}
	}
	me, b, l := m("me", "u0", "1"), m("b", "u1", "1"), m("leaver", "u2", "1")
	l.leaving = true
	var o observer
	o.see(t0, []member{me, b, l}, "me")
	o.see(t0.Add(time.Second), []member{me}, "me")
	if gs := o.ghostMembers(n); len(gs) != 1 || gs[0].name != "b" || gs[0].held.len() != n {
		t.Fatalf("after b and a leaving member vanished: ghosts %+v, want b holding all %d buckets", gs, n)
	}
	v := view{buckets: n, live: []member{me}, ghosts: o.ghostMembers(n)}
	if v.othersHeld("me").len() != n {
		t.Fatal("a ghost does not hold back claims")
	}
	another := m("b", "u3", "2")
	o.see(t0.Add(2*time.Second), []member{me, another}, "me")
	if len(o.ghosts) != 1 {
		t.Fatal("another object of the vanished Lease's name laid its ghost to rest")
	}
	if left, ok := o.untilExpiry(t0.Add(2*time.Second), []member{me}, "me"); !ok || left != 14*time.Second {
		t.Fatalf("until the ghost expires: %v %v, want 14s (15s from when it vanished)", left, ok)
	}
	another.supersedes, another.version = "u1", "3"
	o.see(t0.Add(3*time.Second), []member{me, another}, "me")
	if len(o.ghosts) != 0 {
		t.Fatal("a Lease superseding the vanished one did not lay its ghost to rest")
	}
	o.see(t0.Add(4*time.Second), []member{me}, "me") // the new b vanishes too
	if o.see(t0.Add(5*time.Second), []member{me, another}, "me"); len(o.ghosts) != 0 {
		t.Fatal("the same object coming back did not lay its ghost to rest")
	}
	o.see(t0.Add(6*time.Second), []member{me}, "me")
	if o.see(t0.Add(22*time.Second), []member{me}, "me"); len(o.ghosts) != 0 {
		t.Fatal("a ghost outlived its Lease's duration")
	}
	o.see(t0.Add(23*time.Second), []member{me, another}, "me")
	if o.see(t0.Add(40*time.Second), []member{me}, "me"); len(o.ghosts) != 0 {
		t.Fatal("a Lease that vanished once expired became a ghost")
	}
}
