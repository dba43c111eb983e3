package cache

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/sharding"

	"github.com/kreflector/cache/shard"
)

// The value, parsing and matching are tested in package shard; here the
// names this package keeps must be that package's, unchanged.
func TestShardNamesForward(t *testing.T) {
	var _ shard.Shard = Shard{}
	var _ shard.Key = ShardByUID
	if ShardByUID != shard.ByUID || ShardByNamespace != shard.ByNamespace {
		t.Errorf("keys %q, %q differ from package shard's", ShardByUID, ShardByNamespace)
	}
	ours, err := ReplicaShard(1, 3)
	if err != nil || !ours.Equal(mustShard(t, 1, 3)) {
		t.Errorf("ReplicaShard(1, 3) = %v, %v", ours, err)
	}
	theirs, _ := shard.Replica(1, 3)
	if !ours.Equal(theirs) {
		t.Errorf("ReplicaShard(1, 3) = %v, shard.Replica(1, 3) = %v", ours, theirs)
	}
	back, err := ParseShard(ours.String())
	if err != nil || !back.Equal(ours) {
		t.Errorf("ParseShard(%q) = %v, %v; want it back", ours, back, err)
	}
	built, err := NewShard(ours.Requirements()...)
	if err != nil || !built.Equal(ours) {
		t.Errorf("NewShard(%v) = %v, %v; want it back", ours.Requirements(), built, err)
	}
	bad := []error{
		func() error { _, err := ReplicaShard(0, 0); return err }(),
		func() error { _, err := ReplicaShardBy("object.metadata.name", 0, 2); return err }(),
		func() error { _, err := NewShard(sharding.ShardRangeRequirement{Key: string(ShardByUID)}); return err }(),
		func() error { _, err := ParseShard(" "); return err }(),
	}
	for i, err := range bad {
		if !errors.Is(err, ErrInvalidShard) || !errors.Is(err, shard.ErrInvalid) {
			t.Errorf("bad input %d: error %v, want one wrapping ErrInvalidShard (shard.ErrInvalid)", i, err)
		}
	}
}

func mustShard(t testing.TB, i, n int) Shard { return mustShardBy(t, ShardByUID, i, n) }

func mustShardBy(t testing.TB, key ShardKey, i, n int) Shard {
	t.Helper()
	s, err := ReplicaShardBy(key, i, n)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
