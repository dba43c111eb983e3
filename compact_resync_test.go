package cache

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	clientgofeatures "k8s.io/client-go/features"
)

// A resync hands each held record to the handlers as it is, with either
// RealFIFO mode: every handler gets one object as OnUpdate's old and new,
// the same object as the other handlers, and the store keeps the very
// records it held (nothing is decoded to be encoded again). With the
// AtomicFIFO gate off the queue reads what to resync from the store, one
// key at a time.
func TestCompactResyncKeepsTheRecords(t *testing.T) {
	base := clientgofeatures.FeatureGates()
	defer clientgofeatures.ReplaceFeatureGates(base)
	for _, atomicFIFO := range []bool{true, false} {
		t.Run(fmt.Sprintf("atomic=%v", atomicFIFO), func(t *testing.T) {
			clientgofeatures.ReplaceFeatureGates(base)
			if !atomicFIFO {
				clientgofeatures.ReplaceFeatureGates(gatesWithout{base: base, off: clientgofeatures.AtomicFIFO})
			}
			synctest.Test(t, checkCompactResync)
		})
	}
}

func checkCompactResync(t *testing.T) {
	lw := &scriptLW{noWL: true, lists: []listReply{{list: cmList("10", "", cm("a", "5"), cm("b", "6"), cm("c", "7"))}}}
	inf := NewSharedIndexInformer(lw, &corev1.ConfigMap{}, time.Minute, Indexers{})
	seen := runCompactWithThree(t, inf)
	store := inf.GetIndexer().(*guardedIndexer).compact
	before := map[string]*compactRecord{}
	for _, k := range []string{"ns/a", "ns/b", "ns/c"} {
		r, ok := store.record(k)
		if !ok {
			t.Fatalf("%s is not held after the sync", k)
		}
		before[k] = r
	}
	time.Sleep(time.Minute + time.Second)
	synctest.Wait()
	for k, r := range before {
		if now, _ := store.record(k); now != r {
			t.Errorf("%s: the resync replaced the held record (decoded and encoded it again)", k)
		}
	}
	seen.mu.Lock()
	defer seen.mu.Unlock()
	for i := range 3 {
		updates := seen.calls[i][3:]
		if len(updates) != 3 {
			t.Fatalf("handler %d got %d calls after the sync, want 3 resync updates", i, len(updates))
		}
		for j, c := range updates {
			if c[0] == nil || c[0] != c[1] {
				t.Errorf("handler %d, update %d: old %p and new %p are not one object", i, j, c[0], c[1])
			}
			if _, isRecord := c[1].(*compactRecord); isRecord || c[1] != seen.calls[0][3+j][1] {
				t.Errorf("handler %d, update %d: got %T, not handler 0's decoded object", i, j, c[1])
			}
		}
	}
}
