package listdecode

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kreflector/cache/internal/lean"
)

// fuzzTargets are the Targets FuzzDecode picks from.
var fuzzTargets = []Target{{Typed: &corev1.PodList{}}, {Typed: &corev1.ConfigMapList{}}, {Unstructured: true}, {Metadata: true}}

// FuzzDecode mutates real pages: Decode never panics or hangs, and agrees
// with client-go's client on the same bytes (the Content-Type being what
// Decode sniffs): both fail, with errors of one class, or both succeed
// with DeepEqual objects.
func FuzzDecode(f *testing.F) {
	small := podList(2)
	cms := configMaps()
	cms.Items = cms.Items[:4]
	pm := partials()
	pm.Items = pm.Items[:2]
	f.Add([]byte(smallPods), uint8(0))
	f.Add(jsonOf(f, small), uint8(0))
	f.Add(protobufOf(f, small, scheme.Scheme), uint8(0))
	f.Add(jsonOf(f, cms), uint8(1))
	f.Add(protobufOf(f, cms, scheme.Scheme), uint8(1))
	f.Add([]byte(crList), uint8(2))
	f.Add(jsonOf(f, pm), uint8(3))
	f.Add(protobufOf(f, pm, metaScheme), uint8(3))
	f.Add([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410}`), uint8(0))
	f.Add([]byte(`{"items":[{"metadata":{"name":"a"}}],"kind":"PodList","apiVersion":"v1"}`), uint8(0))
	twice := `{"kind":"PodList","apiVersion":"v1","items":[{"metadata":{"name":"a"}}],"items":[{"metadata":{"name":"b"}}]}`
	f.Add([]byte(twice), uint8(0))
	f.Add([]byte(twice), uint8(2))
	f.Fuzz(func(t *testing.T, body []byte, which uint8) {
		tgt := fuzzTargets[int(which)%len(fuzzTargets)]
		want, wantErr := clientGo(t, tgt, contentTypeOf(body), body)
		for _, w := range []int{1, 2} {
			got, err := Decode(context.Background(), readers["chunks"](body), tgt, Options{Workers: w, Meta: func(metav1.ListMeta) {}})
			same(t, "fuzz", got, err, want, wantErr)
		}
		// Leaving managedFields out: client-go's objects without them.
		if wantErr == nil {
			want = dropAllManagedFields(want)
		}
		drop := func(obj runtime.Object) { lean.DropManagedFields(obj) }
		got, err := Decode(context.Background(), readers["chunks"](body), tgt, Options{Workers: 2, Item: drop, LeaveOutManagedFields: true})
		same(t, "fuzz, managedFields left out", got, err, want, wantErr)
	})
}

// dropAllManagedFields is list with its items' managedFields dropped.
func dropAllManagedFields(list runtime.Object) runtime.Object {
	if list == nil {
		return nil
	}
	out := list.DeepCopyObject()
	items, _ := meta.ExtractList(out) // pointers into out's Items
	for _, o := range items {
		lean.DropManagedFields(o)
	}
	return out
}
