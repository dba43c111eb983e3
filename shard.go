package cache

import (
	"k8s.io/apimachinery/pkg/sharding"

	"github.com/kreflector/cache/shard"
)

// The shard value, its parsing and its matching live in package
// github.com/kreflector/cache/shard; the names below keep the ones this
// package has always had, as aliases of the same types and values and as
// one-line forwarders, so code using either package's names mixes freely.

// ShardKey is the object field whose 64-bit FNV-1a hash places an object in
// a shard, in the field-path form kube-apiserver's shard selectors use. It
// is shard.Key.
type ShardKey = shard.Key

const (
	// ShardByUID hashes metadata.uid: objects spread evenly over the
	// replicas, each object in one shard for its whole life.
	ShardByUID ShardKey = shard.ByUID
	// ShardByNamespace hashes metadata.namespace: a namespace's objects
	// all land in one shard (for controllers that reconcile a namespace
	// at a time); cluster-scoped objects all hash the empty string.
	ShardByNamespace ShardKey = shard.ByNamespace
)

// ErrInvalidShard is wrapped by every error that NewShard, ReplicaShard,
// ParseShard and Shard.Union return for bad input. It is shard.ErrInvalid,
// so errors.Is with either name finds it.
var ErrInvalidShard = shard.ErrInvalid

// Shard is the part of the 64-bit hash space of one key that a replica
// owns: one or more ranges [start, end) over the FNV-1a hash of the key's
// value, as kube-apiserver's server-side sharded LIST and WATCH
// (ListOptions.ShardSelector, feature gate ShardedListAndWatch) takes them.
// The zero Shard is not valid; make one with ReplicaShard, NewShard or
// ParseShard. A Shard is an immutable value, safe to share. It is
// shard.Shard, whose methods (String, Contains, Union, Equal, ...) are
// documented there.
type Shard = shard.Shard

// ReplicaShard returns the shard of replica i (from 0) of n over object
// UIDs: the n shards are equal contiguous ranges that together cover the
// hash space exactly once. It is shard.Replica.
func ReplicaShard(i, n int) (Shard, error) { return shard.Replica(i, n) }

// ReplicaShardBy is ReplicaShard over the given key. It is
// shard.ReplicaBy.
func ReplicaShardBy(key ShardKey, i, n int) (Shard, error) { return shard.ReplicaBy(key, i, n) }

// NewShard returns the shard made of the given ranges, which must all name
// one supported key and each have start < end, both written as
// kube-apiserver writes them: "0x" and 16 lowercase hex digits, or
// "0x10000000000000000" (2^64) for an end. Overlapping and adjacent ranges
// are merged. It is shard.New.
func NewShard(reqs ...sharding.ShardRangeRequirement) (Shard, error) { return shard.New(reqs...) }

// ParseShard reads a shard selector in the form kube-apiserver takes:
// one or more shardRange(<key>, '<start>', '<end>') terms joined by "||",
// white space allowed between tokens, literals in single or double quotes.
// It accepts what Shard.String writes and returns a clear error, wrapping
// ErrInvalidShard, for anything else. It is shard.Parse.
func ParseShard(selector string) (Shard, error) { return shard.Parse(selector) }
