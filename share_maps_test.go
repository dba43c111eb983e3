package cache

import (
	"reflect"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	clientgocache "k8s.io/client-go/tools/cache"
)

// sameMapOf says whether a and b, maps of any one type, are one map.
func sameMapOf(a, b any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
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
		if got := in != nil && in.table != nil && in.table.SharesMaps(); got != tc.maps {
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
