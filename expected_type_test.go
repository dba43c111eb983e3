package cache

import (
	"slices"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache/cachetest"
)

// What reaches the store of a Reflector expecting ConfigMaps when the
// server sends a Pod: a LIST item goes to Replace as it is (as in
// client-go); a WatchList initial event and a watch event are skipped and
// counted as dropped.
func TestObjectsOfAnotherType(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: "2"}}
	t.Run("LIST item and watch event", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			list := &corev1.List{ListMeta: metav1.ListMeta{ResourceVersion: "5"},
				Items: []runtime.RawExtension{{Object: cm("a", "1")}, {Object: pod}}}
			lw := newScript([]listReply{{list: list}}, nil)
			store := cachetest.NewRecordingStore(nil)
			r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, ReflectorOptions{UseWatchList: ptr.To(false)})
			startReflector(t, r)
			<-lw.drained
			w := lw.current(t)
			w.Add(pod)
			w.Add(cm("b", "6"))
			synctest.Wait()
			want := []string{"Replace rv=5 [ns/a@1 ns/p@2]", "Add ns/b@6", "UpdateResourceVersion rv=6"}
			if got := store.CallStrings(); !slices.Equal(got, want) {
				t.Fatalf("store calls %q, want %q", got, want)
			}
			if n := r.Stats().Events[EventDropped]; n != 1 {
				t.Fatalf("dropped events %d, want the Pod's 1", n)
			}
		})
	})
	t.Run("WatchList initial event", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			lw := newScript(nil, []watchReply{{hang: true, events: []watch.Event{
				ev(watch.Added, cm("a", "1")), ev(watch.Added, pod), bookmark("5", true)}}})
			store := cachetest.NewRecordingStore(nil)
			r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, ReflectorOptions{})
			startReflector(t, r)
			<-lw.drained
			synctest.Wait()
			want := []string{"Replace rv=5 [ns/a@1]"}
			if got := store.CallStrings(); !slices.Equal(got, want) {
				t.Fatalf("store calls %q, want %q", got, want)
			}
			if n := r.Stats().Events[EventDropped]; n != 1 {
				t.Fatalf("dropped events %d, want the Pod's 1", n)
			}
		})
	})
}
