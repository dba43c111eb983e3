package ring

import (
	"hash/fnv"
	"slices"
)

// plan computes the target owner of every bucket: each member's quota is
// its equal share (the floor or ceiling of buckets/members), a member keeps
// the buckets it holds up to its quota, and the buckets left over (held by
// nobody, by a non-member, or above a holder's quota) go to the members
// below quota.
//
// It is a function of its arguments only, so every replica that reads the
// same Leases computes the same plan. When the holdings match the previous
// plan, a join moves only the newcomer's quota and a leave only the
// leaver's buckets: the least any balanced assignment can move (exactly,
// while buckets ≥ members·(members+1); see docs/sharding.md). A handoff in
// progress (buckets released but not yet claimed, or claimed early) yields
// the same plan, so replicas do not chase a moving target.
//
// members must be distinct; held[b] is the holder of bucket b or "". The
// result has one owner per bucket, or "" for all if there are no members.
func plan(members []string, held []string) []string {
	owner := make([]string, len(held))
	if len(members) == 0 {
		return owner
	}
	quota := quotas(members, len(held))
	keep(members, held, quota, owner)
	for b := range owner {
		if owner[b] != "" {
			continue
		}
		best := ""
		for _, m := range members {
			if quota[m] > 0 && (best == "" || prefers(b, m, best, len(held))) {
				best = m
			}
		}
		owner[b] = best
		quota[best]--
	}
	return owner
}

// quotas gives each member floor(n/members) buckets, and one more to the
// n mod members members ranked first by their name's hash (a ranking that
// a join or leave does not reorder).
func quotas(members []string, n int) map[string]int {
	ranked := slices.Clone(members)
	slices.SortFunc(ranked, func(a, b string) int {
		if ha, hb := nameHash(a), nameHash(b); ha != hb {
			if ha > hb {
				return -1
			}
			return 1
		}
		return compareStrings(a, b)
	})
	q := make(map[string]int, len(members))
	for i, m := range ranked {
		q[m] = n / len(members)
		if i < n%len(members) {
			q[m]++
		}
	}
	return q
}

// keep fills owner with the buckets each member holds up to its quota,
// preferring those it ranks highest, and lowers quota by what it kept.
func keep(members []string, held []string, quota map[string]int, owner []string) {
	byHolder := make(map[string][]int, len(members))
	for b, h := range held {
		if _, member := quota[h]; member {
			byHolder[h] = append(byHolder[h], b)
		}
	}
	for m, bs := range byHolder {
		slices.SortFunc(bs, func(a, b int) int { return rank(a, b, m, len(held)) })
		n := min(len(bs), quota[m])
		for _, b := range bs[:n] {
			owner[b] = m
		}
		quota[m] -= n
	}
}

// chunks is how many runs of buckets share one preference order: a free
// bucket goes to the member ranking its chunk highest, so a member's
// buckets come in long runs and its selector stays short.
const chunks = 16

// pref is member m's preference for bucket b of n.
func pref(b int, m string, n int) uint64 {
	c := b * chunks / n
	return mix(nameHash(m) ^ mix(uint64(c)+0x9e3779b97f4a7c15))
}

// prefers says whether bucket b goes to m before o.
func prefers(b int, m, o string, n int) bool {
	pm, po := pref(b, m, n), pref(b, o, n)
	if pm != po {
		return pm > po
	}
	return m < o
}

// rank orders buckets a and b as m keeps them: the one it prefers first,
// then the lower index.
func rank(a, b int, m string, n int) int {
	pa, pb := pref(a, m, n), pref(b, m, n)
	switch {
	case pa > pb:
		return -1
	case pa < pb:
		return 1
	}
	return a - b
}

func nameHash(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return mix(h.Sum64())
}

// mix is a 64-bit finaliser that spreads FNV's low-entropy bits.
func mix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb3f98ea3b8d1
	x ^= x >> 33
	return x
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
