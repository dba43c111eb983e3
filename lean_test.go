package cache

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"unsafe"
	"weak"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache/internal/lean"
	"github.com/kreflector/cache/internal/podgen"
)

var leanOptions = ReflectorOptions{ShareStrings: true, DropManagedFields: true}

func podList(rv, cont string, pods ...*corev1.Pod) *corev1.PodList {
	l := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: rv, Continue: cont}}
	for _, p := range pods {
		l.Items = append(l.Items, *p)
	}
	return l
}

// podAt is realistic Pod i at resourceVersion rv, in namespace ns so the
// tests' keys are short.
func podAt(i, rv int) *corev1.Pod { return podgen.Pod(i, rv) }

// The lean options reach every object the store gets: listed, streamed by
// WatchList, added and modified by watch events.
func TestLeanOptionsOnEveryPath(t *testing.T) {
	for _, watchList := range []bool{false, true} {
		t.Run(modeName(watchList)[1:], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lw := &scriptLW{noWL: !watchList}
				if !watchList {
					lw.lists = []listReply{{list: podList("10", "", podAt(0, 1), podAt(1, 2))}}
				}
				store := NewStore(MetaNamespaceKeyFunc)
				startReflector(t, NewReflectorWithOptions(lw, &corev1.Pod{}, store, leanOptions))
				synctest.Wait()
				w := lw.current(t)
				if watchList {
					w.Add(podAt(0, 1))
					w.Add(podAt(1, 2))
					w.Action(watch.Bookmark, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "10",
						Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}})
				}
				w.Add(podAt(2, 11))
				w.Modify(podAt(1, 12))
				synctest.Wait()
				checkLean(t, store, 3)
			})
		})
	}
}

func sameString(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// checkLean checks that store holds n Pods, none with managedFields, all
// of one ReplicaSet sharing their label value and image.
func checkLean(t *testing.T, store Store, n int) {
	t.Helper()
	objs := store.List()
	if len(objs) != n {
		t.Fatalf("store holds %d objects, want %d", len(objs), n)
	}
	first := objs[0].(*corev1.Pod)
	for _, o := range objs {
		p := o.(*corev1.Pod)
		if p.ManagedFields != nil {
			t.Errorf("%s kept its managedFields", p.Name)
		}
		if !sameString(p.Labels["app.kubernetes.io/name"], first.Labels["app.kubernetes.io/name"]) ||
			!sameString(p.Spec.Containers[0].Image, first.Spec.Containers[0].Image) {
			t.Errorf("%s does not share its label value and image with %s", p.Name, first.Name)
		}
	}
}

// Lean options are applied to each LIST page as it arrives: by the time
// the next page is asked for, the first page's managedFields, and its
// copies of values it shares, are garbage.
func TestLeanOptionsPageByPage(t *testing.T) {
	for _, lean := range []bool{true, false} {
		t.Run(fmt.Sprintf("lean=%v", lean), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lw, fields, label := pagedPodsLW()
				var kept [2]bool
				lw.onContinue = func() {
					runtime.GC()
					kept = [2]bool{fields.Value() != nil, label.Value() != nil}
				}
				opts := ReflectorOptions{}
				if lean {
					opts = leanOptions
				}
				store := NewStore(MetaNamespaceKeyFunc)
				startReflector(t, NewReflectorWithOptions(lw, &corev1.Pod{}, store, opts))
				synctest.Wait()
				if kept != [2]bool{!lean, !lean} {
					t.Errorf("first page's managedFields, label value still reachable: %v, want %v", kept, [2]bool{!lean, !lean})
				}
				if len(store.ListKeys()) != 2 {
					t.Errorf("store holds %q", store.ListKeys())
				}
			})
		})
	}
}

// pagedPodsLW answers a LIST in two pages of one Pod each, and returns
// weak pointers to the first Pod's field set and to a label value of it
// held by nothing but its page.
func pagedPodsLW() (*scriptLW, weak.Pointer[byte], weak.Pointer[byte]) {
	p := podAt(0, 1)
	value := strings.Repeat("shared-label-value-", 3)
	p.Labels["app.kubernetes.io/name"] = value
	second := podAt(1, 2)
	second.Labels["app.kubernetes.io/name"] = strings.Clone(value)
	fields := weak.Make(unsafe.SliceData(p.ManagedFields[0].FieldsV1.Raw))
	first := podList("10", "p2", p)
	first.RemainingItemCount = ptr.To[int64](1)
	return &scriptLW{noWL: true, lists: []listReply{{list: first}, {list: podList("10", "", second)}}},
		fields, weak.Make(unsafe.StringData(value))
}

// An informer's transform runs after the lean options: it sees objects
// without managedFields.
func TestLeanOptionsBeforeTheTransform(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &scriptLW{noWL: true, lists: []listReply{{list: podList("10", "", podAt(0, 1))}}}
		inf := NewSharedIndexInformer(lw, &corev1.Pod{}, 0, Indexers{})
		var sawManagedFields atomic.Int32
		if err := inf.SetTransform(func(o interface{}) (interface{}, error) {
			if o.(*corev1.Pod).ManagedFields != nil {
				sawManagedFields.Add(1)
			}
			return o, nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := inf.(ReflectorConfigurable).SetReflectorOptions(leanOptions); err != nil {
			t.Fatal(err)
		}
		stop := runInformer(t, inf)
		synctest.Wait()
		lw.current(t).Add(podAt(1, 11))
		synctest.Wait()
		stop()
		if n := sawManagedFields.Load(); n != 0 {
			t.Errorf("the transform saw managedFields %d times", n)
		}
		if n := len(inf.GetStore().ListKeys()); n != 2 {
			t.Errorf("informer holds %d objects, want 2", n)
		}
	})
}

// Sharing keeps nothing of objects that are gone: churn ten times the
// number of live objects, each new one with a value of its own, and the
// live heap after a collection is what the live objects need.
func TestShareStringsBoundedUnderChurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const live = 500
		var pods []*corev1.Pod
		for i := range live {
			pods = append(pods, churnPod(i))
		}
		lw := &scriptLW{noWL: true, lists: []listReply{{list: podList("1", "", pods...)}}}
		pods = nil
		store := NewStore(MetaNamespaceKeyFunc)
		r := NewReflectorWithOptions(lw, &corev1.Pod{}, store, ReflectorOptions{ShareStrings: true})
		startReflector(t, r)
		synctest.Wait()
		before, values := settledHeap(), r.in.table.Size()
		w := lw.current(t)
		for i := live; i < 11*live; i++ {
			w.Delete(churnPod(i - live))
			w.Add(churnPod(i))
		}
		synctest.Wait()
		after := settledHeap()
		if n := len(store.ListKeys()); n != live {
			t.Fatalf("store holds %d objects, want %d", n, live)
		}
		t.Logf("live heap %d KiB after the initial list, %d KiB after churning %d objects", before>>10, after>>10, 10*live)
		if after > before+before/4 {
			t.Errorf("live heap grew from %d to %d KiB through churn", before>>10, after>>10)
		}
		// The table holds at most the values of the last two generations
		// of objects: no more than a table that met only those.
		bound := lean.NewTable(true, false)
		for i := 11*live - lean.MinSpan; i < 11*live; i++ {
			bound.Share(churnPod(i - live))
			bound.Share(churnPod(i))
		}
		got := r.in.table.Size()
		t.Logf("share table: %d values after the initial list, %d after churn (bound %d)", values, got, bound.Size())
		if got > bound.Size() {
			t.Errorf("share table holds %d values after churn, more than the %d of its last two generations' objects", got, bound.Size())
		}
	})
}

// churnPod is realistic Pod i with a 1 KiB annotation value of its own.
func churnPod(i int) *corev1.Pod {
	p := podAt(i, i+2)
	p.Annotations["own"] = strings.Repeat(strconv.Itoa(i%10), 1024)
	return p
}

// settledHeap collects twice (the second time after cleanups the first
// queued have had a chance to run) and returns the live heap.
func settledHeap() uint64 {
	runtime.GC()
	runtime.Gosched()
	return liveHeap()
}

// A DELETED event's object leaves the cache: it is not shared (the
// table walks nothing), but loses its managedFields like every other.
func TestLeanDeletedEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &scriptLW{noWL: true, lists: []listReply{{list: podList("10", "", podAt(0, 1), podAt(1, 2))}}}
		store := NewStore(MetaNamespaceKeyFunc)
		r := NewReflectorWithOptions(lw, &corev1.Pod{}, store, leanOptions)
		startReflector(t, r)
		synctest.Wait()
		walked, size := r.in.table.Walked(), r.in.table.Size()
		deleted := podAt(1, 3)
		lw.current(t).Delete(deleted)
		synctest.Wait()
		if n := len(store.ListKeys()); n != 1 {
			t.Fatalf("store holds %d objects after the delete, want 1", n)
		}
		if r.in.table.Walked() != walked || r.in.table.Size() != size {
			t.Errorf("a deleted object was shared: %d objects walked, %d values held; before the delete %d, %d",
				r.in.table.Walked(), r.in.table.Size(), walked, size)
		}
		if deleted.ManagedFields != nil {
			t.Error("a deleted object kept its managedFields")
		}
	})
}

// liveHeap collects garbage and returns the bytes still reachable.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
