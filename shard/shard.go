// Package shard is the shard of a sharded LIST and WATCH: the part of the
// 64-bit FNV-1a hash space of one object field that a replica owns, as
// kube-apiserver's ListOptions.ShardSelector (feature gate
// ShardedListAndWatch) takes it.
//
// Replica(i, n) gives replica i of n an equal share; Parse reads a
// selector in the form the server takes and echoes; Shard.Contains says
// whether an object hashes into a shard, as the server decides it. The
// package depends only on apimachinery: the Reflector
// (github.com/kreflector/cache, which re-exports these names as Shard,
// ReplicaShard, ParseShard, ...) and the fake server of
// github.com/kreflector/cache/cachetest both build on it.
package shard

import (
	"cmp"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/sharding"
)

// Key is the object field whose 64-bit FNV-1a hash places an object in a
// shard, in the field-path form kube-apiserver's shard selectors use. Only
// ByUID and ByNamespace are supported.
type Key string

const (
	// ByUID hashes metadata.uid: objects spread evenly over the replicas,
	// each object in one shard for its whole life.
	ByUID Key = "object.metadata.uid"
	// ByNamespace hashes metadata.namespace: a namespace's objects all
	// land in one shard (for controllers that reconcile a namespace at a
	// time); cluster-scoped objects all hash the empty string.
	ByNamespace Key = "object.metadata.namespace"
)

// ErrInvalid is wrapped by every error that New, Replica, ReplicaBy, Parse
// and Shard.Union return for bad input.
var ErrInvalid = errors.New("invalid shard")

// hashSpaceEnd is the exclusive upper bound of the hash space, 2^64, as
// kube-apiserver writes it.
const hashSpaceEnd = "0x10000000000000000"

// Shard is one or more ranges [start, end) of the hash space of one Key.
// The zero Shard is not valid (it owns nothing); make one with Replica,
// ReplicaBy, New or Parse. A Shard is an immutable value, safe to share
// and to compare with Equal.
type Shard struct {
	key Key
	// ranges are sorted, disjoint and not adjacent; last is inclusive, so
	// the whole space is {0, MaxUint64}.
	ranges []hashRange
}

type hashRange struct{ first, last uint64 }

// Replica returns the shard of replica i (from 0) of n over object UIDs:
// the n shards are equal contiguous ranges that together cover the hash
// space exactly once. It fails, wrapping ErrInvalid, unless 0 <= i < n.
func Replica(i, n int) (Shard, error) { return ReplicaBy(ByUID, i, n) }

// ReplicaBy is Replica over the given key.
func ReplicaBy(key Key, i, n int) (Shard, error) {
	if err := checkKey(key); err != nil {
		return Shard{}, err
	}
	if n <= 0 {
		return Shard{}, fmt.Errorf("%w: %d replicas: need at least one", ErrInvalid, n)
	}
	if i < 0 || i >= n {
		return Shard{}, fmt.Errorf("%w: replica %d of %d: want 0 <= i < %d", ErrInvalid, i, n, n)
	}
	r := hashRange{first: boundary(uint64(i), uint64(n)), last: ^uint64(0)}
	if i+1 < n {
		r.last = boundary(uint64(i+1), uint64(n)) - 1
	}
	return Shard{key: key, ranges: []hashRange{r}}, nil
}

// boundary is floor(i * 2^64 / n), for i < n.
func boundary(i, n uint64) uint64 {
	q, _ := bits.Div64(i, 0, n)
	return q
}

// New returns the shard made of the given ranges, which must all name one
// supported key and each have start < end, both written as kube-apiserver
// writes them: "0x" and 16 lowercase hex digits, or "0x10000000000000000"
// (2^64) for an end. Overlapping and adjacent ranges are merged. Bad input
// is an error wrapping ErrInvalid.
func New(reqs ...sharding.ShardRangeRequirement) (Shard, error) {
	if len(reqs) == 0 {
		return Shard{}, fmt.Errorf("%w: no ranges", ErrInvalid)
	}
	s := Shard{key: Key(reqs[0].Key)}
	if err := checkKey(s.key); err != nil {
		return Shard{}, err
	}
	for _, req := range reqs {
		if Key(req.Key) != s.key {
			return Shard{}, fmt.Errorf("%w: mixed keys %q and %q: a shard hashes one key", ErrInvalid, s.key, req.Key)
		}
		r, err := parseRange(req.Start, req.End)
		if err != nil {
			return Shard{}, err
		}
		s.ranges = append(s.ranges, r)
	}
	s.ranges = normalize(s.ranges)
	return s, nil
}

func checkKey(key Key) error {
	if key != ByUID && key != ByNamespace {
		return fmt.Errorf("%w: unsupported key %q: want %q or %q", ErrInvalid, key, ByUID, ByNamespace)
	}
	return nil
}

// parseRange reads [start, end) into an inclusive range.
func parseRange(start, end string) (hashRange, error) {
	first, err := parseBound(start, false)
	if err != nil {
		return hashRange{}, err
	}
	stop, err := parseBound(end, true)
	if err != nil {
		return hashRange{}, err
	}
	if end == hashSpaceEnd {
		return hashRange{first: first, last: ^uint64(0)}, nil
	}
	if stop <= first {
		return hashRange{}, fmt.Errorf("%w: range [%s, %s) is empty or inverted", ErrInvalid, start, end)
	}
	return hashRange{first: first, last: stop - 1}, nil
}

// parseBound reads one bound; only an end may be 2^64, which it returns
// as 0 (parseRange knows it by its text).
func parseBound(s string, isEnd bool) (uint64, error) {
	if s == hashSpaceEnd {
		if !isEnd {
			return 0, fmt.Errorf("%w: start %s is past the hash space", ErrInvalid, s)
		}
		return 0, nil
	}
	digits, ok := strings.CutPrefix(s, "0x")
	if !ok || len(digits) != 16 || strings.ToLower(digits) != digits {
		return 0, fmt.Errorf("%w: bound %q: want 0x and 16 lowercase hex digits, or %s", ErrInvalid, s, hashSpaceEnd)
	}
	v, err := strconv.ParseUint(digits, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: bound %q: %w", ErrInvalid, s, err)
	}
	return v, nil
}

// normalize sorts rs and merges overlapping and adjacent ranges.
func normalize(rs []hashRange) []hashRange {
	slices.SortFunc(rs, func(a, b hashRange) int { return cmp.Compare(a.first, b.first) })
	out := rs[:1]
	for _, r := range rs[1:] {
		top := &out[len(out)-1]
		if top.last == ^uint64(0) || r.first <= top.last+1 {
			top.last = max(top.last, r.last)
			continue
		}
		out = append(out, r)
	}
	return slices.Clip(out)
}

// Key is the field the shard hashes.
func (s Shard) Key() Key { return s.key }

// IsZero says whether s is the zero Shard (no shard).
func (s Shard) IsZero() bool { return len(s.ranges) == 0 }

// Requirements returns s's ranges as apimachinery's shard range
// requirements, in ascending order.
func (s Shard) Requirements() []sharding.ShardRangeRequirement {
	reqs := make([]sharding.ShardRangeRequirement, len(s.ranges))
	for i, r := range s.ranges {
		reqs[i] = sharding.ShardRangeRequirement{Key: string(s.key), Start: hexBound(r.first), End: hashSpaceEnd}
		if r.last != ^uint64(0) {
			reqs[i].End = hexBound(r.last + 1)
		}
	}
	return reqs
}

func hexBound(v uint64) string { return fmt.Sprintf("0x%016x", v) }

// Selector returns s as apimachinery's shard Selector.
func (s Shard) Selector() sharding.Selector { return sharding.NewSelector(s.Requirements()...) }

// String returns the shard selector to send as ListOptions.ShardSelector,
// in the form kube-apiserver documents and echoes in ListMeta.ShardInfo:
// shardRange(<key>, '<start>', '<end>') terms joined by " || ". Parse reads
// it back. The zero Shard gives "".
func (s Shard) String() string {
	if s.IsZero() {
		return ""
	}
	return s.Selector().String()
}

// Equal says whether s and o select the same objects' hashes of the same
// key.
func (s Shard) Equal(o Shard) bool { return s.key == o.key && slices.Equal(s.ranges, o.ranges) }

// Union returns the shard owning what s or o owns. Both must be non-zero
// and hash the same key, or the error wraps ErrInvalid. During a reshard,
// giving each replica the union of its old and new shard before its new
// one keeps every object owned (see docs/sharding.md).
func (s Shard) Union(o Shard) (Shard, error) {
	switch {
	case s.IsZero() || o.IsZero():
		return Shard{}, fmt.Errorf("%w: union with the zero Shard", ErrInvalid)
	case s.key != o.key:
		return Shard{}, fmt.Errorf("%w: mixed keys %q and %q: a shard hashes one key", ErrInvalid, s.key, o.key)
	}
	rs := append(slices.Clone(s.ranges), o.ranges...)
	return Shard{key: s.key, ranges: normalize(rs)}, nil
}

// Fraction is the share of the hash space s owns, from 0 to 1.
func (s Shard) Fraction() float64 {
	var total float64
	for _, r := range s.ranges {
		total += float64(r.last-r.first) + 1
	}
	return total / (1 << 64)
}

// ContainsHash says whether the FNV-1a hash h (see Key.Hash) lies in s.
func (s Shard) ContainsHash(h uint64) bool {
	for _, r := range s.ranges {
		if h >= r.first && h <= r.last {
			return true
		}
	}
	return false
}

// Minus returns the part of s that o does not own: the zero Shard if
// none is left. Both must hash the same key (o may be the zero Shard), or
// the error wraps ErrInvalid. A reshard from o to s fetches only Minus's
// ranges (see the root package's SetShard).
func (s Shard) Minus(o Shard) (Shard, error) {
	if !o.IsZero() && s.key != o.key {
		return Shard{}, fmt.Errorf("%w: mixed keys %q and %q: a shard hashes one key", ErrInvalid, s.key, o.key)
	}
	var out []hashRange
	for _, r := range s.ranges {
		out = append(out, subtract(r, o.ranges)...)
	}
	if len(out) == 0 {
		return Shard{}, nil
	}
	return Shard{key: s.key, ranges: out}, nil
}

// subtract returns the parts of r outside every range of os (sorted,
// disjoint), in order.
func subtract(r hashRange, os []hashRange) []hashRange {
	var out []hashRange
	for _, o := range os {
		if o.last < r.first || o.first > r.last {
			continue
		}
		if o.first > r.first {
			out = append(out, hashRange{first: r.first, last: o.first - 1})
		}
		if o.last == ^uint64(0) || o.last >= r.last {
			return out
		}
		r.first = o.last + 1
	}
	return append(out, r)
}
