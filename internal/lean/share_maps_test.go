package lean

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kreflector/cache/internal/podgen"
)

// Two Pods of one ReplicaSet end up holding one labels map, one
// annotations map, one node selector and one resource list per container
// position; a Pod of another ReplicaSet keeps its own labels; every value
// is what it was.
func TestShareMapsSharesEqualMaps(t *testing.T) {
	a, b, other := decodedPod(t, 0), decodedPod(t, 1), decodedPod(t, 3*podgen.PerReplicaSet)
	wantB := b.DeepCopy()
	tab := NewTable(false, true)
	for _, p := range []*corev1.Pod{a, b, other} {
		tab.Share(p)
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
	tab := NewTable(true, true)
	first := &holder{L: list("1", resource.DecimalSI), Labels: map[string]string{"a": "1", "b": "2"}}
	tab.Share(first)
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
		tab.Share(tc.h)
		if got := [2]bool{sameMapOf(tc.h.L, first.L), sameMapOf(tc.h.Labels, first.Labels)}; got != tc.share {
			t.Errorf("%s: resource list, labels shared = %v, want %v", tc.name, got, tc.share)
		}
		if q, w := tc.h.L[corev1.ResourceCPU], want.L[corev1.ResourceCPU]; q.Cmp(w) != 0 || q.Format != w.Format || q.String() != w.String() {
			t.Errorf("%s: quantity %v (%s), was %v (%s)", tc.name, q.String(), q.Format, w.String(), w.Format)
		}
	}
}
