package cache

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache/cachetest"
)

// An index function that fails on an object for a while makes the
// informer relist until it no longer does; the relist that follows must
// index the object again, not keep what it held. A compact store's
// record keeps the index values (and the failure) computed when it was
// packed, so a relist does not keep a record an index function failed
// on: it packs the listed copy afresh, and the informer is healthy once
// the function succeeds. Without that, the record held since the failure
// was kept, relist after relist, and the informer stayed unhealthy until
// the object changed.
func TestRelistIndexesAgainWhatAnIndexFunctionFailedOn(t *testing.T) {
	for _, c := range []struct {
		name               string
		compact, watchList bool
	}{{"indexer", false, false}, {"compact", true, false}, {"compact, WatchList", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testIndexFailureRelist(t, c.compact, c.watchList) })
		})
	}
}

func testIndexFailureRelist(t *testing.T, compact, watchList bool) {
	srv := cachetest.NewServer(cachetest.Options{})
	defer srv.Close()
	cms := srv.Resource(cachetest.Type{Resource: "configmaps", Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}})
	for i := range 8 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("cm-%d", i)}}
		if _, err := cms.Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var failing atomic.Bool
	byName := byNameUnless(&failing)
	o := ReflectorOptions{UseWatchList: ptr.To(watchList)}
	if compact {
		o.Compact = &CompactOptions{}
	}
	inf := NewSharedIndexInformerWith(o)(cms, &corev1.ConfigMap{}, 0, Indexers{"byName": byName})
	defer runInformer(t, inf)()
	reporter := inf.(InformerHealthReporter)
	if err := reporter.WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	failing.Store(true)
	trigger := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "trigger"}}
	if _, err := cms.Create(t.Context(), trigger, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for reporter.Stats().Reflector.ItemsReused < 9 { // a relist kept the trigger too
		synctest.Wait()
		time.Sleep(100 * time.Millisecond)
	}
	healsOnceIndexable(t, inf, &failing)
}

// An index added by AddIndexers that fails on a held object is recorded
// on its record as a failure when packed is: the relist the failure
// causes does not keep the record, and once the function succeeds the
// object is in the index.
func TestRelistIndexesAgainWhatAnAddedIndexFailedOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := cachetest.NewServer(cachetest.Options{})
		defer srv.Close()
		cms := srv.Resource(cachetest.Type{Resource: "configmaps", Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}})
		for _, n := range []string{"cm-0", "cm-1", "trigger"} {
			if _, err := cms.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: n}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		inf := NewSharedIndexInformerWith(ReflectorOptions{Compact: &CompactOptions{}})(cms, &corev1.ConfigMap{}, 0, Indexers{})
		defer runInformer(t, inf)()
		reporter := inf.(InformerHealthReporter)
		if err := reporter.WaitForSync(t.Context()); err != nil {
			t.Fatal(err)
		}
		var failing atomic.Bool
		failing.Store(true)
		byName := byNameUnless(&failing)
		if err := inf.AddIndexers(Indexers{"byName": byName}); err != nil {
			t.Fatal(err) // the failure is reported as the store's, by health
		}
		for reporter.Stats().Reflector.ItemsReused < 2 { // a relist kept the others
			synctest.Wait()
			time.Sleep(100 * time.Millisecond)
		}
		failing.Store(false)
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		if got, err := inf.GetIndexer().ByIndex("byName", "trigger"); err != nil || len(got) != 1 {
			t.Fatalf("the trigger by its index: %v, %v (%v)", got, err, reporter.Health())
		}
	})
}

// A merged reshard keeps the records of the objects that stay, as they
// are, the one an index function failed on too: the informer must still
// heal once the function succeeds (the store reports the failure again,
// and the relist that follows packs the object afresh), and the object
// must be in the index.
func TestMergedReshardHealsWhatAnIndexFunctionFailedOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := cachetest.NewServer(cachetest.Options{})
		defer srv.Close()
		cms := srv.Resource(cachetest.Type{Resource: "configmaps", Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}})
		old := mustShard(t, 0, 2)
		next, _ := old.Union(mustShard(t, 2, 4))
		for i := range 8 {
			if _, err := cms.Create(t.Context(), shardedCM(t, old, fmt.Sprintf("cm-%d", i), "", i%2 == 0), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		var failing atomic.Bool
		byName := byNameUnless(&failing)
		o := ReflectorOptions{Shard: &old, UseWatchList: ptr.To(false), Compact: &CompactOptions{}}
		inf := NewSharedIndexInformerWith(o)(cms, &corev1.ConfigMap{}, 0, Indexers{"byName": byName})
		defer runInformer(t, inf)()
		reporter := inf.(InformerHealthReporter)
		if err := reporter.WaitForSync(t.Context()); err != nil {
			t.Fatal(err)
		}
		failing.Store(true)
		if _, err := cms.Create(t.Context(), shardedCM(t, old, "trigger", "", true), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for reporter.Health().Healthy {
			synctest.Wait()
			time.Sleep(100 * time.Millisecond)
		}
		if err := inf.(Resharder).SetShard(next); err != nil {
			t.Fatal(err)
		}
		for reporter.Stats().Reflector.ReshardsMerged == 0 {
			synctest.Wait()
			time.Sleep(100 * time.Millisecond)
		}
		if r := heldRecord(inf, "ns/trigger"); r == nil || r.indexErr() == nil {
			t.Fatalf("after the merge the trigger is held as %v, not a record the function failed on", r)
		}
		healsOnceIndexable(t, inf, &failing)
	})
}

// byNameUnless indexes a ConfigMap by its name, and fails on "trigger"
// while failing is set.
func byNameUnless(failing *atomic.Bool) IndexFunc {
	return func(obj any) ([]string, error) {
		cm := obj.(*corev1.ConfigMap)
		if cm.Name == "trigger" && failing.Load() {
			return nil, errors.New("not indexable yet")
		}
		return []string{cm.Name}, nil
	}
}

// healsOnceIndexable lets the index function succeed again and requires
// inf, five minutes on, to be healthy with the trigger in its index.
func healsOnceIndexable(t *testing.T, inf SharedIndexInformer, failing *atomic.Bool) {
	t.Helper()
	failing.Store(false)
	time.Sleep(5 * time.Minute)
	synctest.Wait()
	if h := inf.(InformerHealthReporter).Health(); !h.Healthy {
		t.Fatalf("five minutes after the index function recovered: %v", h)
	}
	if got, err := inf.GetIndexer().ByIndex("byName", "trigger"); err != nil || len(got) != 1 {
		t.Fatalf("the trigger by its index: %v, %v", got, err)
	}
}
