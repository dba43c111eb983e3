package cache

import (
	"context"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kreflector/cache/internal/listhint"
)

// ownedLister answers a LIST of three ConfigMaps as our REST ListWatch
// does when its decoder owns the items: each in an allocation of its own,
// reported with the hint's Owned, Items holding copies. Then, as a
// wrapping ListerWatcher might, it changes c1 in Items.
type ownedLister struct{ owned []runtime.Object }

func (l *ownedLister) ListWithContext(ctx context.Context, _ metav1.ListOptions) (runtime.Object, error) {
	list := cmList("10", "", cm("c0", "10"), cm("c1", "10"), cm("c2", "10"))
	l.owned = nil
	for i := range list.Items {
		c := list.Items[i]
		l.owned = append(l.owned, &c)
	}
	listhint.From(ctx).Owned(list, l.owned, nil)
	list.Items[1].Data = map[string]string{"changed": "after decoding"}
	return list, nil
}

func (l *ownedLister) WatchWithContext(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return watch.NewFake(), nil
}

func (l *ownedLister) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

func (l *ownedLister) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

// TestReflectorKeepsOwnedItems: the Reflector stores the allocations a
// ListWatch reports as owned, rather than copies of Items, for every
// item that Items still holds unchanged; an item changed in Items since
// is stored as Items has it, in an allocation of its own.
func TestReflectorKeepsOwnedItems(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &ownedLister{}
		store := NewStore(MetaNamespaceKeyFunc)
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, noWatchList)
		_, stop := startReflector(t, r)
		defer stop()
		synctest.Wait()
		for i, name := range []string{"c0", "c1", "c2"} {
			obj, ok, _ := store.GetByKey("ns/" + name)
			if !ok {
				t.Fatalf("%s not stored", name)
			}
			kept := obj == lw.owned[i]
			if want := name != "c1"; kept != want {
				t.Errorf("%s: the owned allocation stored: %v, want %v", name, kept, want)
			}
		}
		c1, _, _ := store.GetByKey("ns/c1")
		if c1.(*corev1.ConfigMap).Data["changed"] != "after decoding" {
			t.Errorf("c1 stored as decoded, not as Items has it: %v", c1.(*corev1.ConfigMap).Data)
		}
	})
}
