package cache

import (
	"reflect"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache/internal/podgen"
)

// sameMapOf says whether a and b, maps of any one type, are one map.
func sameMapOf(a, b any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// Two Pods of one ReplicaSet end up holding one labels map, one
// annotations map, one node selector and one resource list per container
// position; a Pod of another ReplicaSet keeps its own labels; every value
// is what it was.
func TestShareMapsSharesEqualMaps(t *testing.T) {
	a, b, other := decodedPod(t, 0), decodedPod(t, 1), decodedPod(t, 3*podgen.PerReplicaSet)
	wantB := b.DeepCopy()
	tab := newShareTableOf(false, true)
	for _, p := range []*corev1.Pod{a, b, other} {
		tab.object(p)
	}
	if !reflect.DeepEqual(b, wantB) {
		t.Fatal("sharing maps changed a value")
	}
	for name, pair := range map[string][2]any{
		"labels":      {a.Labels, b.Labels},
		"annotations": {a.Annotations, b.Annotations},
		"requests":    {a.Spec.Containers[0].Resources.Requests, b.Spec.Containers[0].Resources.Requests},
		"limits":      {a.Spec.Containers[0].Resources.Limits, b.Spec.Containers[0].Resources.Limits},
	} {
		if reflect.ValueOf(pair[0]).Len() == 0 {
			t.Fatalf("the generated Pods have no %s", name)
		}
		if !sameMapOf(pair[0], pair[1]) {
			t.Errorf("two Pods of one ReplicaSet hold two %s maps", name)
		}
	}
	if sameMapOf(a.Labels, other.Labels) {
		t.Error("Pods of two ReplicaSets hold one labels map")
	}
}

// Resource lists are shared when their quantities are equal in value and
// format, and only then; a string map differing in one value is not.
func TestShareMapsEquality(t *testing.T) {
	list := func(cpu string, f resource.Format) corev1.ResourceList {
		q := resource.MustParse(cpu)
		q.Format = f
		return corev1.ResourceList{corev1.ResourceCPU: q}
	}
	type holder struct {
		L      corev1.ResourceList
		Labels map[string]string
	}
	tab := newShareTableOf(true, true)
	first := &holder{L: list("1", resource.DecimalSI), Labels: map[string]string{"a": "1", "b": "2"}}
	tab.object(first)
	for _, tc := range []struct {
		name  string
		h     *holder
		share [2]bool
	}{
		{"equal", &holder{L: list("1", resource.DecimalSI), Labels: map[string]string{"b": "2", "a": "1"}}, [2]bool{true, true}},
		{"equal value, other spelling", &holder{L: list("1000m", resource.DecimalSI)}, [2]bool{true, false}},
		{"other value", &holder{L: list("2", resource.DecimalSI), Labels: map[string]string{"a": "1", "b": "3"}}, [2]bool{false, false}},
		{"other format", &holder{L: list("1", resource.BinarySI), Labels: map[string]string{"a": "1"}}, [2]bool{false, false}},
	} {
		want := *tc.h
		want.L = tc.h.L.DeepCopy()
		tab.object(tc.h)
		if got := [2]bool{sameMapOf(tc.h.L, first.L), sameMapOf(tc.h.Labels, first.Labels)}; got != tc.share {
			t.Errorf("%s: resource list, labels shared = %v, want %v", tc.name, got, tc.share)
		}
		if q, w := tc.h.L[corev1.ResourceCPU], want.L[corev1.ResourceCPU]; q.Cmp(w) != 0 || q.Format != w.Format || q.String() != w.String() {
			t.Errorf("%s: quantity %v (%s), was %v (%s)", tc.name, q.String(), q.Format, w.String(), w.Format)
		}
	}
}

// Maps are not shared for a store that transforms what it is given,
// since a transform changing a map in place would change it for every
// object sharing it; they are for one that does not.
func TestShareMapsNotBeforeATransform(t *testing.T) {
	noop := func(o interface{}) (interface{}, error) { return o, nil }
	keyOf := clientgocache.MetaNamespaceKeyFunc
	known := clientgocache.NewStore(keyOf)
	for _, tc := range []struct {
		name  string
		store ReflectorStore
		maps  bool
	}{
		{"our store", NewStore(MetaNamespaceKeyFunc), true},
		{"client-go's store", clientgocache.NewStore(keyOf), true},
		{"client-go's store with a transformer", clientgocache.NewStore(keyOf, clientgocache.WithTransformer(noop)), false},
		{"client-go's RealFIFO", clientgocache.NewRealFIFO(keyOf, known, nil), true},
		{"client-go's RealFIFO with a transformer", clientgocache.NewRealFIFO(keyOf, known, noop), false},
		{"client-go's DeltaFIFO with a transformer", clientgocache.NewDeltaFIFOWithOptions(clientgocache.DeltaFIFOOptions{KeyFunction: keyOf, Transformer: noop}), false},
	} {
		in := newIntake(ReflectorOptions{ShareMaps: true}, tc.store)
		if got := in != nil && in.table != nil && in.table.maps; got != tc.maps {
			t.Errorf("%s: maps shared = %v, want %v", tc.name, got, tc.maps)
		}
	}
}

// Through an informer: Pods of one ReplicaSet share their labels map in
// the indexer; with SetTransform they do not, and a transform deleting a
// label from one Pod leaves the other's alone.
func TestShareMapsThroughAnInformer(t *testing.T) {
	for _, transform := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			lw := &scriptLW{noWL: true, lists: []listReply{{list: podList("10", "", podAt(0, 1), podAt(1, 2))}}}
			inf := NewSharedIndexInformer(lw, &corev1.Pod{}, 0, Indexers{})
			if transform {
				if err := inf.SetTransform(func(o interface{}) (interface{}, error) {
					if p := o.(*corev1.Pod); p.Name == podAt(0, 1).Name {
						delete(p.Labels, "team")
					}
					return o, nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			if err := inf.(ReflectorConfigurable).SetReflectorOptions(ReflectorOptions{ShareStrings: true, ShareMaps: true}); err != nil {
				t.Fatal(err)
			}
			stop := runInformer(t, inf)
			synctest.Wait()
			stop()
			pods := make([]*corev1.Pod, 2)
			for i := range pods {
				p := podAt(i, i+1)
				obj, ok, err := inf.GetStore().GetByKey(p.Namespace + "/" + p.Name)
				if err != nil || !ok {
					t.Fatalf("Pod %d not in the store (%v)", i, err)
				}
				pods[i] = obj.(*corev1.Pod)
			}
			if shared := sameMapOf(pods[0].Labels, pods[1].Labels); shared == transform {
				t.Errorf("transform %v: labels shared = %v", transform, shared)
			}
			if _, ok := pods[1].Labels["team"]; !ok {
				t.Errorf("transform %v: the other Pod lost its label", transform)
			}
		})
	}
}
