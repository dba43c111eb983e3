package cache

import (
	"fmt"
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
	"github.com/kreflector/cache/internal/repr"
)

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

// Through an informer's relist: a changed Pod adopts its held version's
// strings, and its field sets and labels map too unless the informer has
// a transform (which could change them in place under the held version's
// readers).
func TestRelistAdoptsThroughAnInformer(t *testing.T) {
	for _, transform := range []bool{false, true} {
		t.Run(fmt.Sprintf("transform=%v", transform), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lw := &scriptLW{noWL: true, lists: []listReply{
					{list: podList("10", "", podgen.Decoded(t, podgen.Pod(0, 1)))},
					{list: podList("20", "", podgen.Changed(t, 0, 2))},
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
				k, _ := key(podgen.Pod(0, 1))
				held, _, _ := inf.GetStore().GetByKey(k)
				expire(t, lw)
				now, _, _ := inf.GetStore().GetByKey(k)
				p, h := now.(*corev1.Pod), held.(*corev1.Pod)
				if p.ResourceVersion != "2" {
					t.Fatalf("store holds RV %s, want 2", p.ResourceVersion)
				}
				podgen.CheckAdopted(t, p, h, !transform)
				if got := repr.SameMap(p.Labels, h.Labels); got == transform {
					t.Errorf("labels map adopted = %v, want %v", got, !transform)
				}
			})
		})
	}
}
