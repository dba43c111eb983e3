package ring

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
)

// converge returns the plan for members reached from holdings that were
// the previous plan: what a ring settles on.
func converge(members []string, held []string) []string {
	for range 3 {
		next := plan(members, held)
		if slices.Equal(next, held) {
			return next
		}
		held = next
	}
	return held
}

func names(rng *rand.Rand, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("replica-%x", rng.Int63())
	}
	return out
}

func moved(a, b []string) int {
	n := 0
	for i := range a {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

func loads(owner []string) map[string]int {
	l := map[string]int{}
	for _, o := range owner {
		l[o]++
	}
	return l
}

// A join moves exactly the newcomer's quota and a leave exactly the
// leaver's buckets, for every member count the default ring size keeps
// strictly minimal (n·(n+1) ≤ buckets), and the plan is balanced to one
// bucket.
func TestPlanMovesTheLeastABalancedRingCan(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	const buckets = 1024
	for trial := range 300 {
		n := 1 + trial%31
		members := names(rng, n)
		before := converge(members, make([]string, buckets))
		checkBalanced(t, before, n)
		joined := append(slices.Clone(members), names(rng, 1)...)
		after := plan(joined, before)
		if got, want := moved(before, after), loads(after)[joined[n]]; got != want {
			t.Fatalf("join %d→%d moved %d buckets, want the newcomer's quota %d", n, n+1, got, want)
		}
		checkBalanced(t, after, n+1)
		if n == 1 {
			continue
		}
		gone := rng.Intn(n)
		left := slices.Delete(slices.Clone(members), gone, gone+1)
		afterLeave := plan(left, before)
		if got, want := moved(before, afterLeave), loads(before)[members[gone]]; got != want {
			t.Fatalf("leave %d→%d moved %d buckets, want the leaver's %d", n, n-1, got, want)
		}
		checkBalanced(t, afterLeave, n-1)
	}
}

func checkBalanced(t *testing.T, owner []string, n int) {
	t.Helper()
	l := loads(owner)
	if len(l) != n {
		t.Fatalf("%d members own buckets, want %d", len(l), n)
	}
	for m, k := range l {
		if k < len(owner)/n || k > len(owner)/n+1 {
			t.Fatalf("%s owns %d of %d buckets, want %d or %d", m, k, len(owner), len(owner)/n, len(owner)/n+1)
		}
	}
}

// Any state a handoff passes through (some buckets released, some
// claimed) plans the same target, so replicas reading Leases at different
// moments of one handoff agree.
func TestPlanIsStableThroughAHandoff(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for trial := range 200 {
		n := 1 + trial%12
		members := names(rng, n)
		before := converge(members, make([]string, 256))
		joined := append(slices.Clone(members), names(rng, 1+rng.Intn(2))...)
		if rng.Intn(2) == 0 && n > 1 {
			joined = joined[1:] // a leave and a join at once
		}
		target := plan(joined, before)
		mid := slices.Clone(before)
		for b := range mid {
			if mid[b] == target[b] {
				continue
			}
			switch rng.Intn(3) {
			case 0: // released
				mid[b] = ""
			case 1: // released and claimed
				mid[b] = target[b]
			}
		}
		if got := plan(joined, mid); !slices.Equal(got, target) {
			t.Fatalf("trial %d: a half-done handoff plans %d buckets differently", trial, moved(got, target))
		}
	}
}

// Members' buckets come in runs, so selectors stay short: a ring formed
// from nothing, then grown and shrunk one member at a time, never gives a
// member more than the measured bound of ranges.
func TestPlanKeepsSelectorsShort(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	const buckets = 1024
	owner := make([]string, buckets)
	var members []string
	most := 0
	for step := range 60 {
		if len(members) < 2 || (len(members) < 12 && rng.Intn(3) > 0) {
			members = append(members, names(rng, 1)...)
		} else {
			i := rng.Intn(len(members))
			members = slices.Delete(members, i, i+1)
		}
		owner = converge(members, owner)
		for _, m := range members {
			if r := runs(owner, m); r > most {
				most = r
			}
		}
		_ = step
	}
	if most > maxRanges {
		t.Fatalf("a member needed %d ranges, more than %d", most, maxRanges)
	}
	t.Logf("most ranges any member needed: %d", most)
}

func runs(owner []string, m string) int {
	r := 0
	for b := range owner {
		if owner[b] == m && (b == 0 || owner[b-1] != m) {
			r++
		}
	}
	return r
}
