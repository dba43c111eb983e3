//go:build e2e

package e2e

import (
	"fmt"
	"reflect"
	goruntime "runtime"
	"strconv"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/internal/lean"
)

// Lean objects on a real kube-apiserver: a Reflector with ShareStrings,
// ShareMaps and DropManagedFields, through a LIST and a live workload of
// creates, updates and deletes, holds objects equal to the server's but
// for their managedFields, field by field; and ConfigMaps created with
// equal labels and data hold one map for them per stripe of the share
// table. It runs over JSON and over protobuf, where managedFields are not
// even decoded.
func TestLeanObjectsMatchTheServer(t *testing.T) {
	t.Parallel()
	for _, enc := range []string{"json", "protobuf"} {
		t.Run(enc, func(t *testing.T) {
			t.Parallel()
			leanObjectsMatchTheServer(t, client(t, encodingConfig(testCluster.admin, enc)))
		})
	}
}

func leanObjectsMatchTheServer(t *testing.T, cs *kubernetes.Clientset) {
	ns := namespace(t, cs)
	const existing, groups = 120, 4
	for i := range existing {
		g := strconv.Itoa(i % groups)
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "cm-" + strconv.Itoa(i), Labels: map[string]string{"app": "lean-" + g, "tier": "backend"}},
			Data:       map[string]string{"config.yaml": "level: info\ngroup: " + g + "\n"},
		}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	tracked := track(store)
	r := cache.NewReflectorWithOptions(configMapsLW(cs, ns), &corev1.ConfigMap{}, tracked, cache.ReflectorOptions{
		Name: "lean", UseWatchList: ptr.To(false), ShareStrings: true, ShareMaps: true, DropManagedFields: true,
	})
	runReflector(t, r)
	mustSync(t, r)
	assertSharedMaps(t, store, ns, existing, groups)
	mustReachRV(t, tracked, workload(t, cs, ns, existing, 200, 11))
	server, err := serverList(t.Context(), cs, "configmaps", ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(server) != len(store.List()) {
		t.Fatalf("the server holds %d ConfigMaps, our store %d", len(server), len(store.List()))
	}
	for _, o := range server {
		want := o.(*corev1.ConfigMap).DeepCopy()
		want.ManagedFields = nil
		got, ok, err := store.GetByKey(ns + "/" + want.Name)
		if err != nil || !ok {
			t.Fatalf("%s not in our store (%v)", want.Name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s differs from the server's:\n ours   %+v\n server %+v", want.Name, got, want)
		}
	}
	t.Logf("%d ConfigMaps equal to the server's but for managedFields", len(server))
}

// assertSharedMaps checks that the ConfigMaps cm-0..cm-(existing-1), a
// group of equal labels and data for each i%groups, hold few maps per
// group: one per stripe of the Reflector's share table at most (its decode
// workers share objects at once through as many stripes), against one
// map per object without ShareMaps.
func assertSharedMaps(t *testing.T, store cache.Store, ns string, existing, groups int) {
	t.Helper()
	bound := min(goruntime.GOMAXPROCS(0), lean.MaxStripes)
	for g := range groups {
		labels, data := map[unsafe.Pointer]bool{}, map[unsafe.Pointer]bool{}
		for i := g; i < existing; i += groups {
			obj, ok, err := store.GetByKey(fmt.Sprintf("%s/cm-%d", ns, i))
			if err != nil || !ok {
				t.Fatalf("cm-%d not in our store (%v)", i, err)
			}
			cm := obj.(*corev1.ConfigMap)
			labels[reflect.ValueOf(cm.Labels).UnsafePointer()] = true
			data[reflect.ValueOf(cm.Data).UnsafePointer()] = true
			if cm.ManagedFields != nil {
				t.Errorf("cm-%d kept its managedFields", i)
			}
		}
		if len(labels) > bound || len(data) > bound {
			t.Errorf("group %d: %d ConfigMaps with equal labels and data hold %d labels maps and %d data maps, want at most %d each",
				g, existing/groups, len(labels), len(data), bound)
		}
	}
}
