package listitems

import (
	"fmt"
	"reflect"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// clientGo is what meta.EachListItemWithAlloc hands out for list.
func clientGo(t *testing.T, list runtime.Object) ([]interface{}, error) {
	t.Helper()
	var out []interface{}
	err := meta.EachListItemWithAlloc(list, func(o runtime.Object) error {
		out = append(out, o)
		return nil
	})
	return out, err
}

func pods(n int) *corev1.PodList {
	l := &corev1.PodList{}
	for i := range n {
		l.Items = append(l.Items, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("p-", i), Namespace: "ns", Labels: map[string]string{"i": fmt.Sprint(i)}}})
	}
	return l
}

// TestSameItemsAsClientGo: every kind of list, small and large, at any
// worker count, gives EachListItemWithAlloc's items (and errors), after
// what dst already held.
func TestSameItemsAsClientGo(t *testing.T) {
	lists := map[string]runtime.Object{
		"small typed":  pods(3),
		"large typed":  pods(parallelFrom + 5),
		"empty":        &corev1.PodList{},
		"unstructured": &unstructured.UnstructuredList{Items: []unstructured.Unstructured{{Object: map[string]interface{}{"kind": "Pod", "apiVersion": "v1"}}}},
		"raw items":    &metav1.List{Items: []runtime.RawExtension{{Object: &corev1.Pod{}}}},
		"not a list":   &corev1.Pod{},
	}
	for name, list := range lists {
		want, wantErr := clientGo(t, list)
		for _, workers := range []int{1, 2, 3, 8} {
			got, err := AppendWithAlloc([]interface{}{"before"}, list, workers)
			if fmt.Sprint(err) != fmt.Sprint(wantErr) {
				t.Fatalf("%s, %d workers: error %v, want %v", name, workers, err, wantErr)
			}
			if err != nil {
				continue
			}
			if got[0] != "before" || !reflect.DeepEqual(got[1:], want) && !(len(got) == 1 && len(want) == 0) {
				t.Fatalf("%s, %d workers: %d items, not client-go's %d", name, workers, len(got)-1, len(want))
			}
		}
	}
}

// TestLargeListsAreCopiedOut: each item of a large typed list is a copy
// of its own, outside the list's backing array, so that an object kept
// does not keep the list alive.
func TestLargeListsAreCopiedOut(t *testing.T) {
	list := pods(parallelFrom + 5)
	lo := uintptr(unsafe.Pointer(&list.Items[0]))
	hi := lo + uintptr(len(list.Items))*unsafe.Sizeof(list.Items[0])
	got, err := AppendWithAlloc(nil, list, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range got {
		p := o.(*corev1.Pod)
		if at := uintptr(unsafe.Pointer(p)); at >= lo && at < hi {
			t.Fatalf("item %d points into the list's array", i)
		}
		if p.Name != list.Items[i].Name {
			t.Fatalf("item %d is %s, want %s", i, p.Name, list.Items[i].Name)
		}
	}
}

// owned is list's items each copied into an allocation of its own, as a
// decoder that owns its items hands them over (listdecode's Owned).
func owned(list *corev1.PodList) []runtime.Object {
	out := make([]runtime.Object, len(list.Items))
	for i := range list.Items {
		p := list.Items[i]
		out[i] = &p
	}
	return out
}

// TestOwnedItemsAreKept: AppendOwned appends the owned allocations
// themselves for items unchanged in Items, a copy of Items' element for
// one changed there since (a field set, a map replaced), and falls back
// to AppendWithAlloc for owned items that do not match Items one to one;
// always with EachListItemWithAlloc's values.
func TestOwnedItemsAreKept(t *testing.T) {
	for _, n := range []int{3, parallelFrom + 5} {
		for _, workers := range []int{1, 2} {
			list := pods(n)
			own := owned(list)
			list.Items[1].Spec.NodeName = "moved"
			list.Items[2].Labels = map[string]string{"replaced": "yes"}
			want, _ := clientGo(t, list)
			got, err := AppendOwned([]interface{}{"before"}, list, own, nil, workers)
			if err != nil || got[0] != "before" || !reflect.DeepEqual(got[1:], want) {
				t.Fatalf("%d items, %d workers: not client-go's items (%v)", n, workers, err)
			}
			for i, o := range got[1:] {
				kept := o == own[i]
				if changed := i == 1 || i == 2; kept == changed {
					t.Fatalf("%d items, %d workers: item %d kept its allocation: %v, want %v", n, workers, i, kept, !changed)
				}
			}
		}
	}
	list := pods(3)
	for name, own := range map[string][]runtime.Object{
		"too few":    owned(list)[:2],
		"wrong type": {&corev1.Service{}, &corev1.Service{}, &corev1.Service{}},
		"nil item":   {(*corev1.Pod)(nil), &list.Items[1], &list.Items[2]},
	} {
		got, err := AppendOwned(nil, list, own, nil, 1)
		want, _ := clientGo(t, list)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: not client-go's items (%v)", name, err)
		}
		for i, o := range got {
			if i < len(own) && o == own[i] {
				t.Fatalf("%s: item %d kept an allocation that does not match", name, i)
			}
		}
	}
}

// TestHeldItemsStandIn: an item held stands in for is appended as what
// stands for it, whatever its element of Items holds; a list whose
// owned items do not fit with stand-ins is an error, never items made up
// from zero elements.
func TestHeldItemsStandIn(t *testing.T) {
	for _, n := range []int{3, parallelFrom + 5} {
		for _, workers := range []int{1, 2} {
			list := pods(n)
			own := owned(list)
			held := make([]any, n)
			stand := "stands for item 1"
			held[1], own[1], list.Items[1] = stand, nil, corev1.Pod{}
			got, err := AppendOwned(nil, list, own, held, workers)
			if err != nil || len(got) != n || got[1] != stand {
				t.Fatalf("%d items, %d workers: item 1 is %v (%v)", n, workers, got[1], err)
			}
			if got[0] != own[0] || got[2] != own[2] {
				t.Fatalf("%d items, %d workers: the decoded items were not kept", n, workers)
			}
		}
	}
	list := pods(3)
	own := owned(list)[:2]
	if _, err := AppendOwned(nil, list, own, []any{nil, "x"}, 1); err == nil {
		t.Fatal("stand-ins that do not fit the list: no error")
	}
}

// TestUnstructuredHeldItemsStandIn: in an unstructured list, each
// stand-in takes its item's place, and every other item is what
// EachListItemWithAlloc gives (a new Unstructured on the item's map);
// stand-ins that do not match the items are an error.
func TestUnstructuredHeldItemsStandIn(t *testing.T) {
	u := &unstructured.UnstructuredList{}
	for i := range 4 {
		item := unstructured.Unstructured{}
		item.SetName(fmt.Sprint("u", i))
		u.Items = append(u.Items, item)
	}
	var want []interface{}
	if err := meta.EachListItemWithAlloc(u, func(o runtime.Object) error { want = append(want, o); return nil }); err != nil {
		t.Fatal(err)
	}
	standIn := &unstructured.Unstructured{}
	held := []any{nil, standIn, nil, nil}
	got, err := AppendOwned(nil, u, nil, held, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[1] != standIn {
		t.Fatalf("got %d items, item 1 %v; want 4 with the stand-in", len(got), got[1])
	}
	for _, i := range []int{0, 2, 3} {
		o := got[i].(*unstructured.Unstructured)
		if !reflect.DeepEqual(o, want[i]) || reflect.ValueOf(o.Object).Pointer() != reflect.ValueOf(u.Items[i].Object).Pointer() || o == &u.Items[i] {
			t.Errorf("item %d is not a new Unstructured on the item's map", i)
		}
	}
	if _, err := AppendOwned(nil, u, nil, held[:3], 2); err == nil {
		t.Error("3 stand-ins for 4 items: want an error")
	}
}
