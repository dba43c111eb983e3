package listdecode

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kreflector/cache/internal/lean"
)

// withoutManagedFields is list with every item's managedFields dropped.
func withoutManagedFields(t *testing.T, list runtime.Object) runtime.Object {
	t.Helper()
	out := list.DeepCopyObject()
	switch l := out.(type) {
	case *corev1.PodList:
		for i := range l.Items {
			lean.DropManagedFields(&l.Items[i])
		}
	case *metav1.PartialObjectMetadataList:
		for i := range l.Items {
			lean.DropManagedFields(&l.Items[i])
		}
	}
	return out
}

// With LeaveOutManagedFields, protobuf items come out as client-go decodes
// them with their managedFields dropped, and none reaches Item with them;
// a JSON list still decodes them (Item drops them).
func TestManagedFieldsLeftOut(t *testing.T) {
	pods := podList(40)
	meta := partials()
	for _, c := range []struct {
		name        string
		tgt         Target
		ct          string
		body        []byte
		wantLeftOut bool
	}{
		{"typed protobuf", Target{Typed: &corev1.PodList{}}, ctProtobuf, protobufOf(t, pods, scheme.Scheme), true},
		{"metadata protobuf", Target{Metadata: true}, ctProtobuf, protobufOf(t, meta, metaScheme), true},
		{"typed JSON", Target{Typed: &corev1.PodList{}}, ctJSON, jsonOf(t, pods), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			want, err := clientGo(t, c.tgt, c.ct, c.body)
			if err != nil {
				t.Fatal(err)
			}
			want = withoutManagedFields(t, want)
			for _, workers := range []int{1, 2} {
				var sawManaged atomic.Bool // Item runs on the workers
				item := func(obj runtime.Object) {
					m, _ := obj.(metav1.Object)
					if len(m.GetManagedFields()) > 0 {
						sawManaged.Store(true)
					}
					lean.DropManagedFields(obj)
				}
				got, err := Decode(context.Background(), bytes.NewReader(c.body), c.tgt, Options{Workers: workers, Item: item, LeaveOutManagedFields: true})
				if err != nil {
					t.Fatal(err)
				}
				if !equal(got, want) {
					t.Fatalf("workers %d: objects differ\n got %s\nwant %s", workers, dump(got), dump(want))
				}
				if sawManaged.Load() == c.wantLeftOut {
					t.Fatalf("workers %d: an item reached Item with managedFields: %v; want %v", workers, sawManaged.Load(), !c.wantLeftOut)
				}
			}
		})
	}
}
