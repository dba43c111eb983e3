package shard

import (
	"fmt"

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
	return s.ContainsHash(s.key.Hash(m)), nil
}

// FNV-1a's 64-bit parameters (the standard library's hash/fnv).
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// Hash returns the 64-bit FNV-1a hash of m's value for k (its namespace
// for ByNamespace, its UID for any other key), the hash apimachinery's
// sharding.HashField and kube-apiserver place objects by. It does not
// allocate and is safe for concurrent use.
func (k Key) Hash(m metav1.Object) uint64 {
	v := string(m.GetUID())
	if k == ByNamespace {
		v = m.GetNamespace()
	}
	h := uint64(fnvOffset64)
	for i := 0; i < len(v); i++ {
		h ^= uint64(v[i])
		h *= fnvPrime64
	}
	return h
}
