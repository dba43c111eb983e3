package cache

import (
	"context"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgocache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache/internal/listhint"
)

// aheadListWatch lists three ConfigMaps as our REST ListWatch does under
// a Reflector's hint: each decoded into an allocation of its own and
// through the hint's Item, the list reported Itemized, Owned and
// Untouched. Then, unlike ours, it adds an entry to each item's data (a
// map the item shares with its allocation): a record's bytes packed where
// Item ran lack it, bytes packed from the object the Reflector got have
// it.
func aheadListWatch() *clientgocache.ListWatch {
	lw := &clientgocache.ListWatch{}
	lw.ListWithContextFunc = func(ctx context.Context, _ metav1.ListOptions) (runtime.Object, error) {
		list := cmList("10", "", cm("a", "5"), cm("b", "6"), cm("c", "7"))
		h := listhint.From(ctx)
		var owned []runtime.Object
		for i := range list.Items {
			list.Items[i].Data = map[string]string{"decoded": "yes"}
			own := list.Items[i].DeepCopy()
			if item := h.Item(); item != nil {
				item(own)
			}
			list.Items[i], owned = *own, append(owned, own)
		}
		h.Itemized(list)
		h.Owned(list, owned)
		h.Untouched(list, lw)
		for i := range list.Items {
			list.Items[i].Data["after"] = "item"
		}
		return list, nil
	}
	lw.WatchFuncWithContext = func(context.Context, metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil }
	lw.ListFunc = func(o metav1.ListOptions) (runtime.Object, error) {
		return lw.ListWithContextFunc(context.Background(), o)
	}
	lw.WatchFunc = func(o metav1.ListOptions) (watch.Interface, error) {
		return lw.WatchFuncWithContext(context.Background(), o)
	}
	return lw
}

// wrapped is a ListerWatcher of someone else's around lw, passing the
// call's context on.
func wrapped(lw *clientgocache.ListWatch) *clientgocache.ListWatch {
	return &clientgocache.ListWatch{
		ListWithContextFunc:  lw.ListWithContext,
		WatchFuncWithContext: lw.WatchWithContext,
		ListFunc:             lw.List,
		WatchFunc:            lw.Watch,
	}
}

// A compact informer's initial LIST packs each item where our ListWatch
// decodes it (the hint's Item) and keeps those bytes for a list returned
// untouched to the Reflector that called that ListWatch; through a
// ListerWatcher of someone else's, which might change the items, it packs
// them from what the Reflector got.
func TestCompactPacksWhereItemsAreDecoded(t *testing.T) {
	for _, direct := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			lw := aheadListWatch()
			var lister ListerWatcher = lw
			if !direct {
				lister = wrapped(lw)
			}
			inf := NewSharedIndexInformer(lister, &corev1.ConfigMap{}, 0, Indexers{})
			if err := inf.(ReflectorConfigurable).SetReflectorOptions(ReflectorOptions{UseWatchList: ptr.To(false), Compact: &CompactOptions{ReadCacheBytes: -1}}); err != nil {
				t.Fatal(err)
			}
			stop := runInformer(t, inf)
			defer stop()
			synctest.Wait()
			for _, name := range []string{"a", "b", "c"} {
				obj, ok, err := inf.GetIndexer().GetByKey("ns/" + name)
				if !ok || err != nil {
					t.Fatalf("ns/%s: %v, %v", name, ok, err)
				}
				_, after := obj.(*corev1.ConfigMap).Data["after"]
				if after == direct {
					t.Errorf("called directly: %v; the record of ns/%s has what was added after Item: %v", direct, name, after)
				}
			}
		})
	}
}
