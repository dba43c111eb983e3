package cache

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"unsafe"
	"weak"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache/internal/podgen"
)

// decodedFrom is p as a client decodes it: every string its own.
func decodedFrom(t testing.TB, p *corev1.Pod) *corev1.Pod { return podgen.Decoded(t, p) }

// changedPod is Pod i at rv with its first container's image changed.
func changedPod(t testing.TB, i, rv int) *corev1.Pod {
	p := realisticPod(i, rv)
	p.Spec.Containers[0].Image = "registry.example.com/other:v2"
	return decodedFrom(t, p)
}

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
			adoptHeld(obj, held, mutable)
			if !reflect.DeepEqual(obj, want) {
				t.Fatal("adopting changed a value")
			}
			checkAdopted(t, obj, held, mutable)
			if sameString(obj.ResourceVersion, held.ResourceVersion) || sameString(obj.Spec.Containers[0].Image, held.Spec.Containers[0].Image) {
				t.Error("a changed value was adopted")
			}
			if sameMap(obj.Labels, held.Labels) != mutable {
				t.Errorf("labels adopted whole = %v, want %v", !mutable, mutable)
			}
			if sameString(mapKey(ownAnnotations, "prometheus.io/port"), mapKey(held.Annotations, "prometheus.io/port")) {
				t.Error("a map was written into")
			}
		})
	}
}

// checkAdopted checks that obj holds held's copy of the strings realistic
// Pods' versions have in common, and of a field set if mutable and only
// then.
func checkAdopted(t *testing.T, obj, held *corev1.Pod, mutable bool) {
	t.Helper()
	adopted := map[string][2]string{
		"name":          {obj.Name, held.Name},
		"uid":           {string(obj.UID), string(held.UID)},
		"namespace":     {obj.Namespace, held.Namespace},
		"node":          {obj.Spec.NodeName, held.Spec.NodeName},
		"sidecar image": {obj.Spec.Containers[1].Image, held.Spec.Containers[1].Image},
		"owner uid":     {string(obj.OwnerReferences[0].UID), string(held.OwnerReferences[0].UID)},
		"container id":  {obj.Status.ContainerStatuses[0].ContainerID, held.Status.ContainerStatuses[0].ContainerID},
	}
	for what, v := range adopted {
		if !sameString(v[0], v[1]) {
			t.Errorf("%s: not the held copy", what)
		}
	}
	if got := unsafe.SliceData(obj.ManagedFields[0].FieldsV1.Raw) == unsafe.SliceData(held.ManagedFields[0].FieldsV1.Raw); got != mutable {
		t.Errorf("field set adopted = %v, want %v", got, mutable)
	}
}

// Nothing is adopted from an object of another type, from nil, from the
// object itself, or into unstructured content (all maps).
func TestAdoptHeldLeavesOthersAlone(t *testing.T) {
	obj := changedPod(t, 4, 200)
	name := obj.Name
	for _, held := range []interface{}{nil, cm(obj.Name, "1"), *decodedPod(t, 4), obj} {
		adoptHeld(obj, held, true)
		if !sameString(obj.Name, name) {
			t.Errorf("adopted from a %T", held)
		}
	}
	u, heldU := decodedUnstructuredPod(t, 5), decodedUnstructuredPod(t, 5)
	adoptHeld(u, heldU, true)
	if sameString(u.GetNamespace(), heldU.GetNamespace()) {
		t.Error("unstructured content was entered")
	}
	adoptHeld(nil, heldU, true)
}

// fieldSetCM is a ConfigMap at rv whose managedFields entry has a 1 KiB
// field set of its own, and a weak pointer to that set's bytes.
func fieldSetCM(name, rv string) (*corev1.ConfigMap, weak.Pointer[byte]) {
	c := cm(name, rv)
	raw := []byte(strings.Repeat("f", 1024))
	c.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "m", FieldsV1: &metav1.FieldsV1{Raw: raw}}}
	return c, weak.Make(unsafe.SliceData(raw))
}

// On a relist, a changed object's field set equal to the held version's
// is the held one, and the listed copy of it is garbage by the time the
// next page is asked for; with ReuseHeldObjects false both live until
// the store's Replace.
func TestRelistAdoptsFromChangedObjectsPageByPage(t *testing.T) {
	for _, reuse := range []bool{true, false} {
		t.Run(fmt.Sprintf("reuse=%v", reuse), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a, _ := fieldSetCM("a", "1")
				again, copyOfSet := fieldSetCM("a", "5")
				first := cmList("20", "p2", again)
				first.RemainingItemCount = ptr.To[int64](1)
				lw := &scriptLW{noWL: true, lists: []listReply{{list: cmList("10", "", a)}, {list: first}, {list: cmList("20", "", cm("b", "2"))}}}
				kept := make(chan bool, 1)
				lw.onContinue = func() {
					runtime.GC()
					kept <- copyOfSet.Value() != nil
				}
				store := NewStore(MetaNamespaceKeyFunc)
				startReflector(t, NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, ReflectorOptions{ReuseHeldObjects: ptr.To(reuse)}))
				synctest.Wait()
				held, _, _ := store.GetByKey("ns/a")
				expire(t, lw)
				if got := <-kept; got == reuse {
					t.Errorf("the listed copy of a's field set still reachable = %v, want %v", got, !reuse)
				}
				now, _, _ := store.GetByKey("ns/a")
				if objectID(now) != "ns/a@5" {
					t.Fatalf("store holds %s for a, want ns/a@5", objectID(now))
				}
				shared := unsafe.SliceData(now.(*corev1.ConfigMap).ManagedFields[0].FieldsV1.Raw) == unsafe.SliceData(held.(*corev1.ConfigMap).ManagedFields[0].FieldsV1.Raw)
				if shared != reuse {
					t.Errorf("a@5 holds a@1's field set = %v, want %v", shared, reuse)
				}
			})
		})
	}
}

// BenchmarkAdoptHeld is what adopting costs per changed object on a
// relist: a Pod decoded from bytes (its image changed), then adopting
// from its held version, against decoding alone.
//
//	go test -run '^$' -bench BenchmarkAdoptHeld -benchmem -count 6 .
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
			adoptHeld(obj, held[i%pool], true)
		}
	}
}

// Through an informer's relist: a changed Pod adopts its held version's
// strings, and its field sets and labels map too unless the informer has
// a transform (which could change them in place under the held version's
// readers).
func TestRelistAdoptsThroughAnInformer(t *testing.T) {
	for _, transform := range []bool{false, true} {
		t.Run(fmt.Sprintf("transform=%v", transform), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lw := &scriptLW{noWL: true, lists: []listReply{
					{list: podList("10", "", decodedFrom(t, realisticPod(0, 1)))},
					{list: podList("20", "", changedPod(t, 0, 2))},
				}}
				inf := NewSharedIndexInformer(lw, &corev1.Pod{}, 0, Indexers{})
				if transform {
					if err := inf.SetTransform(func(o interface{}) (interface{}, error) { return o, nil }); err != nil {
						t.Fatal(err)
					}
				}
				runInformer(t, inf)
				synctest.Wait()
				key := MetaNamespaceKeyFunc
				k, _ := key(realisticPod(0, 1))
				held, _, _ := inf.GetStore().GetByKey(k)
				expire(t, lw)
				now, _, _ := inf.GetStore().GetByKey(k)
				p, h := now.(*corev1.Pod), held.(*corev1.Pod)
				if p.ResourceVersion != "2" {
					t.Fatalf("store holds RV %s, want 2", p.ResourceVersion)
				}
				checkAdopted(t, p, h, !transform)
				if got := sameMap(p.Labels, h.Labels); got == transform {
					t.Errorf("labels map adopted = %v, want %v", got, !transform)
				}
			})
		})
	}
}
