package cachetest

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kreflector/cache"
)

// Objects created without a UID get one that spreads over the hash space:
// four replica shards each get about a quarter of 2,000 objects.
func TestCreatedUIDsSpreadOverShards(t *testing.T) {
	uids := make(map[types.UID]bool)
	counts := make([]int, 4)
	for rev := uint64(1); rev <= 2000; rev++ {
		u := newUID(rev)
		if uids[u] {
			t.Fatalf("UID %s made twice", u)
		}
		uids[u] = true
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: u}}
		for i := range counts {
			s, _ := cache.ReplicaShard(i, 4)
			if in, _ := s.Contains(obj); in {
				counts[i]++
			}
		}
	}
	for i, n := range counts {
		if n < 400 || n > 600 {
			t.Errorf("shard %d of 4 holds %d of 2000 objects (%v), want about 500", i, n, counts)
		}
	}
}
