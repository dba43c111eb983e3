package cache

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache/cachetest"
)

// A watch event the store refuses is not lost: the watch ends, Health is
// Degraded (StoreFailing) at once with the refusal as its error, the
// refusal is counted, and after a backoff delay the Reflector relists, so
// that once the store accepts, it holds what the server has and Health is
// Synced again.
func TestRefusedWatchEventIsNotLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("transform failed")
		lw := newScript([]listReply{{list: cmList("1", "", cm("a", "1"))}, {list: cmList("3", "", cm("a", "2"), cm("b", "3"))}}, nil)
		store := cachetest.NewRecordingStore(nil)
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, ReflectorOptions{UseWatchList: ptr.To(false)})
		startReflector(t, r)
		synctest.Wait()
		store.FailOn(cachetest.OpUpdate, boom)
		lw.current(t).Modify(cm("a", "2"))
		synctest.Wait()
		h := r.Health()
		if h.State != Degraded || h.Reason != ReasonStoreFailing || !errors.Is(h.LastError, ErrStoreRefused) || !errors.Is(h.LastError, boom) {
			t.Fatalf("health after the refusal: %+v", h)
		}
		if st := r.Stats(); st.StoreRefusals != 1 {
			t.Fatalf("StoreRefusals %d, want 1", st.StoreRefusals)
		}
		store.FailOn(cachetest.OpUpdate, nil)
		time.Sleep(2 * time.Minute) // past any backoff delay
		synctest.Wait()
		if got := store.CallStrings(); !slices.Contains(got, "Replace rv=3 [ns/a@2 ns/b@3]") {
			t.Fatalf("no relist after the refusal: %q", got)
		}
		if st := r.Stats(); st.Lists[ListStoreRefused] != 1 {
			t.Fatalf("lists %v, want one for the refusal", st.Lists)
		}
		if h := r.Health(); h.State != Synced {
			t.Fatalf("health after the relist: %+v", h)
		}
	})
}

// An informer whose transform fails on a watch event's object does not
// lose the change: Health says StoreFailing, and once the transform
// accepts the object, the relist brings it to the handlers.
func TestInformerTransformFailureIsNotLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := newScript([]listReply{{list: cmList("1", "", cm("a", "1"))}, {list: cmList("2", "", cm("a", "2"))}}, nil)
		inf := NewSharedIndexInformerWith(ReflectorOptions{UseWatchList: ptr.To(false)})(lw, &corev1.ConfigMap{}, 0, Indexers{})
		failing := true
		var mu sync.Mutex
		must(t, inf.SetTransform(func(obj interface{}) (interface{}, error) {
			mu.Lock()
			defer mu.Unlock()
			if c, ok := obj.(*corev1.ConfigMap); ok && c.ResourceVersion == "2" && failing {
				return nil, errors.New("transform failed")
			}
			return obj, nil
		}))
		log := &changeLog{}
		_, err := inf.AddEventHandler(log.handler())
		must(t, err)
		defer runInformer(t, inf)()
		synctest.Wait()
		lw.current(t).Modify(cm("a", "2"))
		synctest.Wait()
		if h := inf.(InformerHealthReporter).Health().Reflector; h.Reason != ReasonStoreFailing {
			t.Fatalf("health: %+v", h)
		}
		mu.Lock()
		failing = false
		mu.Unlock()
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if got := log.take(); !slices.Contains(got, "update a@1->2") {
			t.Fatalf("handler calls %q, want the update to 2 after the relist", got)
		}
	})
}
