package cache

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	clientgofeatures "k8s.io/client-go/features"
	"k8s.io/utils/ptr"
)

// A merged reshard whose Replace is queued behind watch events the store
// has not applied yet (the informer's goroutine is held, here by an index
// function) keeps what the store holds once those are applied: the
// object the queued update changed stays at its new version, and the one
// the queued delete removed stays deleted. Decoded and compact.
func TestMergedReshardKeepsQueuedWatchEvents(t *testing.T) {
	for _, compact := range []bool{false, true} {
		t.Run(fmt.Sprintf("compact=%v", compact), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { mergeBehindQueuedEvents(t, compact) })
		})
	}
}

func mergeBehindQueuedEvents(t *testing.T, compact bool) {
	old := mustShard(t, 0, 2)
	q0, q2 := mustShard(t, 0, 4), mustShard(t, 2, 4)
	next, _ := q0.Union(q2)
	stays, gone, slow := shardedCM(t, q0, "stays", "2", true), shardedCM(t, q0, "gone", "3", true), shardedCM(t, q0, "slow", "4", true)
	enters := shardedCM(t, q2, "enters", "9", true)
	w := watch.NewFakeWithChanSize(8, false)
	lw := newScript([]listReply{
		{list: echoed(cmList("5", "", stays, gone, slow), old)},
		{list: echoed(cmList("9", "", enters), q2)},
	}, []watchReply{{w: w}, {hang: true}})
	hold, held := make(chan struct{}), make(chan struct{})
	var once sync.Once
	byName := func(obj any) ([]string, error) {
		if cm := obj.(*corev1.ConfigMap); cm.Name == "slow" && cm.ResourceVersion == "6" {
			once.Do(func() {
				close(held)
				<-hold
			})
		}
		return []string{obj.(*corev1.ConfigMap).Name}, nil
	}
	o := ReflectorOptions{Shard: &old, UseWatchList: ptr.To(false)}
	if compact {
		o.Compact = &CompactOptions{}
	}
	inf := NewSharedIndexInformerWith(o)(lw, &corev1.ConfigMap{}, 0, Indexers{"byName": byName})
	log := &changeLog{}
	if _, err := inf.AddEventHandler(log.handler()); err != nil {
		t.Fatal(err)
	}
	defer runInformer(t, inf)()
	synctest.Wait()
	log.take()
	w.Modify(withRV(slow, "6")) // the informer's goroutine stops in its index function
	<-held
	changed := withRV(stays, "7")
	changed.Data = map[string]string{"v": "new"}
	w.Modify(changed)
	w.Delete(withRV(gone, "8"))
	synctest.Wait()
	if err := inf.(Resharder).SetShard(next); err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
	close(hold)
	if err := inf.(Resharder).WaitForShard(t.Context(), next); err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
	if st := inf.(InformerHealthReporter).Stats().Reflector; st.ReshardsMerged != 1 {
		t.Fatalf("the reshard was not merged: %+v", st.ReshardFallbacks)
	}
	keys := inf.GetStore().ListKeys()
	slices.Sort(keys)
	if want := []string{"ns/enters", "ns/slow", "ns/stays"}; !slices.Equal(keys, want) {
		t.Fatalf("store %q, want %q", keys, want)
	}
	got, _, _ := inf.GetStore().GetByKey("ns/stays")
	if rv := got.(*corev1.ConfigMap).ResourceVersion; rv != "7" {
		t.Fatalf("ns/stays at resourceVersion %s after the merge, want the queued update's 7", rv)
	}
	want := []string{"add enters", "delete gone", "update slow@4->6", "update stays@2->7"}
	if got := log.take(); !slices.Equal(got, want) {
		t.Fatalf("handlers got %q, want %q", got, want)
	}
}

func withRV(cm *corev1.ConfigMap, rv string) *corev1.ConfigMap {
	c := cm.DeepCopy()
	c.ResourceVersion = rv
	return c
}

// With client-go's AtomicFIFO gate off the queue emits a delta per object
// and could not apply a merge in order with what is queued before it: the
// reshard lists the whole new shard, and says why.
func TestReshardWithPerObjectQueueRelists(t *testing.T) {
	base := clientgofeatures.FeatureGates()
	defer clientgofeatures.ReplaceFeatureGates(base)
	clientgofeatures.ReplaceFeatureGates(gatesWithout{base: base, off: clientgofeatures.AtomicFIFO})
	synctest.Test(t, func(t *testing.T) {
		old := mustShard(t, 0, 2)
		q0, q2 := mustShard(t, 0, 4), mustShard(t, 2, 4)
		next, _ := q0.Union(q2)
		stays, enters := shardedCM(t, q0, "stays", "2", true), shardedCM(t, q2, "enters", "4", true)
		lw := newScript([]listReply{
			{list: echoed(cmList("5", "", stays), old)},
			{list: echoed(cmList("6", "", stays, enters), next)},
		}, []watchReply{{hang: true}, {hang: true}})
		inf := NewSharedIndexInformerWith(ReflectorOptions{Shard: &old, UseWatchList: ptr.To(false)})(lw, &corev1.ConfigMap{}, 0, Indexers{})
		defer runInformer(t, inf)()
		synctest.Wait()
		if err := inf.(Resharder).SetShard(next); err != nil {
			t.Fatal(err)
		}
		if err := inf.(Resharder).WaitForShard(t.Context(), next); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		st := inf.(InformerHealthReporter).Stats().Reflector
		if st.ReshardsMerged != 0 || st.ReshardFallbacks[FallbackPerObjectQueue] != 1 {
			t.Fatalf("merged %d, fallbacks %v", st.ReshardsMerged, st.ReshardFallbacks)
		}
		if keys := inf.GetStore().ListKeys(); len(keys) != 2 {
			t.Fatalf("store %q", keys)
		}
	})
}
