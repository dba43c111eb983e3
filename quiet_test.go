package cache

import (
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kreflector/cache/cachetest"
)

// A resource nobody writes must not look stalled. Its first watch gets
// bookmarks after one write; every watch after that starts at the newest
// resourceVersion and, as from kube-apiserver, gets no bookmark at all.
// Those watches end at their timeouts, cleanly, hour after hour, and health
// stays Synced throughout, with the default stall window.
func TestQuietResourceIsNotStalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := cachetest.NewServer(cachetest.Options{})
		defer srv.Close()
		cms := srv.Resource(cachetest.Type{Resource: "configmaps", Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}})
		var changes []Health
		r := NewReflectorWithOptions(cms, &corev1.ConfigMap{}, NewStore(MetaNamespaceKeyFunc), ReflectorOptions{
			Rand:           rand.New(rand.NewPCG(7, 7)),
			OnHealthChange: func(h Health) { changes = append(changes, h) },
		})
		ctx, stop := startReflector(t, r)
		if err := r.WaitForSync(ctx); err != nil {
			t.Fatal(err)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "only"}}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Hour)
		synctest.Wait()
		st := r.Stats()
		stop()
		if st.Events[watch.Bookmark] == 0 {
			t.Fatal("the watch open at the write got no bookmark: the scenario did not happen")
		}
		if st.WatchesOpened < 12 {
			t.Fatalf("%d watches in two hours: want one every 5-10 minutes", st.WatchesOpened)
		}
		if n := st.WatchEnds[WatchStalled]; n != 0 {
			t.Fatalf("%d watches on a quiet resource ended as stalled", n)
		}
		for i, h := range changes {
			if stopped := i == len(changes)-1; h.State != Synced && !(stopped && h.State == Stopped) {
				t.Fatalf("health went %v(%s) on a quiet resource: %v", h.State, h.Reason, h.LastError)
			}
		}
	})
}
