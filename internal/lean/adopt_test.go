package lean

import (
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kreflector/cache/internal/repr"
)

// A changed object takes the held version's copy of each string that is
// equal at the same place, its own names and ids included, and with
// mutable of each equal byte slice and string map; what changed keeps its
// own copy, no value changes, and no map is written into.
func TestAdoptHeldTakesUnchangedValues(t *testing.T) {
	for _, mutable := range []bool{true, false} {
		t.Run(fmt.Sprintf("mutable=%v", mutable), func(t *testing.T) {
			held := decodedFrom(t, realisticPod(3, 100))
			obj := changedPod(t, 3, 200)
			want := obj.DeepCopy()
			ownAnnotations := obj.Annotations
			Adopt(obj, held, mutable)
			if !reflect.DeepEqual(obj, want) {
				t.Fatal("adopting changed a value")
			}
			checkAdopted(t, obj, held, mutable)
			if sameString(obj.ResourceVersion, held.ResourceVersion) || sameString(obj.Spec.Containers[0].Image, held.Spec.Containers[0].Image) {
				t.Error("a changed value was adopted")
			}
			if repr.SameMap(obj.Labels, held.Labels) != mutable {
				t.Errorf("labels adopted whole = %v, want %v", !mutable, mutable)
			}
			if sameString(mapKey(ownAnnotations, "prometheus.io/port"), mapKey(held.Annotations, "prometheus.io/port")) {
				t.Error("a map was written into")
			}
		})
	}
}

// Nothing is adopted from an object of another type, from nil, from the
// object itself, or into unstructured content (all maps).
func TestAdoptHeldLeavesOthersAlone(t *testing.T) {
	obj := changedPod(t, 4, 200)
	name := obj.Name
	for _, held := range []interface{}{nil, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: obj.Name, ResourceVersion: "1"}}, *decodedPod(t, 4), obj} {
		Adopt(obj, held, true)
		if !sameString(obj.Name, name) {
			t.Errorf("adopted from a %T", held)
		}
	}
	u, heldU := decodedUnstructuredPod(t, 5), decodedUnstructuredPod(t, 5)
	Adopt(u, heldU, true)
	if sameString(u.GetNamespace(), heldU.GetNamespace()) {
		t.Error("unstructured content was entered")
	}
	Adopt(nil, heldU, true)
}

// BenchmarkAdoptHeld is what adopting costs per changed object on a
// relist: a Pod decoded from bytes (its image changed), then adopting
// from its held version, against decoding alone.
//
//	go test -run '^$' -bench BenchmarkAdoptHeld -benchmem -count 6 ./internal/lean
func BenchmarkAdoptHeld(b *testing.B) {
	for _, enc := range []string{"json", "protobuf"} {
		b.Run(enc+"/decode", func(b *testing.B) { benchAdopt(b, enc, false) })
		b.Run(enc+"/decode+adopt", func(b *testing.B) { benchAdopt(b, enc, true) })
	}
}

func benchAdopt(b *testing.B, encoding string, adopt bool) {
	const pool = 2048
	enc, dec := memCodec(encoding)
	raw, held := make([][]byte, pool), make([]*corev1.Pod, pool)
	for i := range raw {
		p := realisticPod(i, i+5000)
		p.Spec.Containers[0].Image = "registry.example.com/other:v2"
		raw[i] = encoded(b, enc, p)
		held[i] = decodedFrom(b, realisticPod(i, i+1))
	}
	for i := 0; b.Loop(); i++ {
		obj, _, err := dec.Decode(raw[i%pool], nil, &corev1.Pod{})
		if err != nil {
			b.Fatal(err)
		}
		if adopt {
			Adopt(obj, held[i%pool], true)
		}
	}
}
