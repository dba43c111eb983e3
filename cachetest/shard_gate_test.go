package cachetest_test

import (
	"sync"
	"testing"
	"testing/synctest"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kreflector/cache/cachetest"
)

// allHalves is the unsharded list of createHalves' objects.
var allHalves = []string{"ns/hi1@1", "ns/hi2@2", "ns/lo1@3", "ns/lo2@4"}

// With the gate off the server ignores shard selectors, even malformed
// ones: LISTs are whole, counted and carry no ShardInfo, watches and
// WatchLists send every object.
func TestShardSelectorIgnoredWithTheGateOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, cms := newServer(t, cachetest.Options{DisableShardedListAndWatch: true})
		createHalves(t, cms)
		for _, sel := range []string{lowerHalf, "shardRange(object.metadata.name, 'x', 'y')"} {
			got, l := mustList(t, cms, metav1.ListOptions{ShardSelector: sel})
			if !equal(got, allHalves) || l.ShardInfo != nil {
				t.Errorf("%q: %v with ShardInfo %s, want everything without", sel, got, shardInfo(l))
			}
		}
		_, l := mustList(t, cms, metav1.ListOptions{ShardSelector: lowerHalf, Limit: 1})
		if l.RemainingItemCount == nil || *l.RemainingItemCount != 3 {
			t.Errorf("a page of an ignored shard counts %v remaining items, want 3", l.RemainingItemCount)
		}
		opts := watchList("")
		opts.ShardSelector = lowerHalf
		w := openWatch(t, cms, opts)
		expectEvents(t, w, "ADDED ns/hi1@1", "ADDED ns/hi2@2", "ADDED ns/lo1@3", "ADDED ns/lo2@4", "BOOKMARK @4 end")
		update(t, cms, "ns/hi1")
		expectEvents(t, w, "MODIFIED ns/hi1@5")
	})
}

// SetShardedListAndWatch flips the gate for the requests that follow;
// watches already open keep the filtering they were opened with.
func TestSetShardedListAndWatchOnARunningServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cms := newServer(t, cachetest.Options{})
		createHalves(t, cms)
		sharded := metav1.ListOptions{ShardSelector: lowerHalf}
		before := openWatch(t, cms, sharded)
		expectEvents(t, before, "ADDED ns/lo1@3", "ADDED ns/lo2@4")

		srv.SetShardedListAndWatch(false)
		if got, l := mustList(t, cms, sharded); !equal(got, allHalves) || l.ShardInfo != nil {
			t.Fatalf("gate off: %v with ShardInfo %s, want everything without", got, shardInfo(l))
		}
		after := openWatch(t, cms, metav1.ListOptions{ShardSelector: lowerHalf, ResourceVersion: "4"})
		update(t, cms, "ns/hi1")
		expectEvents(t, before)
		expectEvents(t, after, "MODIFIED ns/hi1@5")

		srv.SetShardedListAndWatch(true)
		if got, l := mustList(t, cms, sharded); !equal(got, []string{"ns/lo1@3", "ns/lo2@4"}) || shardInfo(l) != lowerHalf {
			t.Fatalf("gate on again: %v with ShardInfo %s, want the lower half with the echo", got, shardInfo(l))
		}
	})
}

// Flipping the gate while LISTs run is safe, and each LIST sees one
// setting throughout: sharded with its echo, or whole without.
func TestSetShardedListAndWatchConcurrently(t *testing.T) {
	srv, cms := newServer(t, cachetest.Options{})
	createHalves(t, cms)
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 200 {
			srv.SetShardedListAndWatch(i%2 == 0)
		}
	})
	for range 200 {
		got, l := mustList(t, cms, metav1.ListOptions{ShardSelector: lowerHalf})
		sharded := equal(got, []string{"ns/lo1@3", "ns/lo2@4"}) && shardInfo(l) == lowerHalf
		whole := equal(got, allHalves) && l.ShardInfo == nil
		if !sharded && !whole {
			t.Fatalf("%v with ShardInfo %s: neither sharded nor whole", got, shardInfo(l))
		}
	}
	wg.Wait()
}
