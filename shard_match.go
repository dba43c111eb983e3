package cache

import (
	"fmt"
	"hash"
	"hash/fnv"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Contains says whether obj's key hashes into s, as kube-apiserver decides
// it (apimachinery's sharding.Selector Matches gives the same answer;
// TestShardMatchesApimachinery holds the two together). It fails for an
// object without metadata.
func (s Shard) Contains(obj runtime.Object) (bool, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return false, fmt.Errorf("shard of %T: %w", obj, err)
	}
	var h shardHasher
	return s.ContainsHash(h.hash(s.key, m)), nil
}

// shardHasher hashes shard keys with the standard library's FNV-1a, the
// hash apimachinery's sharding.HashField uses, without its text formatting
// or an allocation per object. It belongs to one goroutine.
type shardHasher struct {
	h   hash.Hash64
	buf []byte
}

// hash returns the FNV-1a hash of m's value for key.
func (sh *shardHasher) hash(key ShardKey, m metav1.Object) uint64 {
	if sh.h == nil {
		sh.h = fnv.New64a()
	}
	v := string(m.GetUID())
	if key == ShardByNamespace {
		v = m.GetNamespace()
	}
	sh.buf = append(sh.buf[:0], v...)
	sh.h.Reset()
	sh.h.Write(sh.buf)
	return sh.h.Sum64()
}
