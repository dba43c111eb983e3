package ring

import (
	"fmt"
	"math/big"
	"math/bits"
	"strings"

	"k8s.io/apimachinery/pkg/sharding"

	"github.com/kreflector/cache/shard"
)

// A bucket is one of the ring's equal contiguous slices of the 64-bit hash
// space: with 2^k buckets, bucket i is [i·2^(64-k), (i+1)·2^(64-k)). Buckets
// are the unit of ownership, of handoff and of the handling gate.

// bucketOf returns the bucket of hash h in a ring of n buckets (a power of
// two).
func bucketOf(h uint64, n int) int {
	return int(h >> (64 - bits.TrailingZeros(uint(n))))
}

// set is a set of buckets, a bitmap of one bit per bucket. Its zero value is
// not usable: make one with newSet. A set is owned by one goroutine; the
// handling gate keeps its own atomic copy.
type set struct {
	words []uint64
	n     int
}

func newSet(n int) set { return set{words: make([]uint64, (n+63)/64), n: n} }

// fullSet is the set of all n buckets.
func fullSet(n int) set {
	s := newSet(n)
	for b := range n {
		s.add(b)
	}
	return s
}

func (s set) has(b int) bool { return s.words[b/64]&(1<<(b%64)) != 0 }
func (s set) add(b int)      { s.words[b/64] |= 1 << (b % 64) }
func (s set) del(b int)      { s.words[b/64] &^= 1 << (b % 64) }

func (s set) clone() set {
	c := newSet(s.n)
	copy(c.words, s.words)
	return c
}

// isEmpty says whether s has no bucket.
func (s set) isEmpty() bool {
	for _, w := range s.words {
		if w != 0 {
			return false
		}
	}
	return true
}

// len is the number of buckets in s.
func (s set) len() int {
	c := 0
	for _, w := range s.words {
		c += bits.OnesCount64(w)
	}
	return c
}

func (s set) equal(o set) bool {
	if s.n != o.n {
		return false
	}
	for i, w := range s.words {
		if o.words[i] != w {
			return false
		}
	}
	return true
}

// union, minus and intersect return new sets.
func (s set) union(o set) set     { return s.combine(o, func(a, b uint64) uint64 { return a | b }) }
func (s set) minus(o set) set     { return s.combine(o, func(a, b uint64) uint64 { return a &^ b }) }
func (s set) intersect(o set) set { return s.combine(o, func(a, b uint64) uint64 { return a & b }) }

func (s set) combine(o set, f func(a, b uint64) uint64) set {
	c := newSet(s.n)
	for i := range c.words {
		c.words[i] = f(s.words[i], o.words[i])
	}
	return c
}

// list returns the buckets of s in increasing order.
func (s set) list() []int {
	var out []int
	for b := 0; b < s.n; b++ {
		if s.has(b) {
			out = append(out, b)
		}
	}
	return out
}

// encode writes s as lowercase hex, bucket 0 in the most significant bit of
// the first digit: the form kept in a member's Lease.
func (s set) encode() string {
	var v big.Int
	for b := 0; b < s.n; b++ {
		if s.has(b) {
			v.SetBit(&v, s.n-1-b, 1)
		}
	}
	digits := s.n / 4
	return fmt.Sprintf("%0*x", digits, &v)
}

// decodeSet reads what encode wrote for a ring of n buckets.
func decodeSet(text string, n int) (set, error) {
	s := newSet(n)
	if len(text) != n/4 {
		return s, fmt.Errorf("bucket set %q: want %d hex digits for %d buckets", text, n/4, n)
	}
	var v big.Int
	if _, ok := v.SetString(strings.ToLower(text), 16); !ok {
		return s, fmt.Errorf("bucket set %q: not hex", text)
	}
	for b := 0; b < n; b++ {
		if v.Bit(n-1-b) == 1 {
			s.add(b)
		}
	}
	return s, nil
}

// shardOf returns the shard of key covering the buckets of s, adjacent
// buckets merged into one range; ok is false for the empty set, which no
// Shard can express.
func shardOf(s set, key shard.Key) (sh shard.Shard, ok bool) {
	var reqs []sharding.ShardRangeRequirement
	shift := 64 - bits.TrailingZeros(uint(s.n))
	for b := 0; b < s.n; {
		if !s.has(b) {
			b++
			continue
		}
		e := b
		for e < s.n && s.has(e) {
			e++
		}
		reqs = append(reqs, sharding.ShardRangeRequirement{Key: string(key), Start: bound(b, shift, s.n), End: bound(e, shift, s.n)})
		b = e
	}
	if len(reqs) == 0 {
		return shard.Shard{}, false
	}
	sh, err := shard.New(reqs...)
	if err != nil {
		panic(fmt.Sprintf("ring: buckets make an invalid shard: %v", err)) // unreachable: ranges are well formed
	}
	return sh, true
}

// bound is bucket b's start, or 2^64 for b == n, as kube-apiserver writes it.
func bound(b, shift, n int) string {
	if b == n {
		return "0x10000000000000000"
	}
	return fmt.Sprintf("0x%016x", uint64(b)<<shift)
}
