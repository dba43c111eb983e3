//go:build e2e

package e2e

import (
	"fmt"
	"reflect"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache"
)

// Lean objects on a real kube-apiserver: a Reflector with ShareStrings,
// ShareMaps and DropManagedFields, through a LIST and a live workload of
// creates, updates and deletes, holds objects equal to the server's but
// for their managedFields, field by field; and ConfigMaps created with
// equal labels and data hold one map each for them.
func TestLeanObjectsMatchTheServer(t *testing.T) {
	t.Parallel()
	cs := client(t, testCluster.admin)
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
	assertSharedMaps(t, store, ns, groups)
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

// assertSharedMaps checks that the ConfigMaps cm-0..cm-(2*groups-1), two
// per group of equal labels and data, hold one labels map and one data map
// per group.
func assertSharedMaps(t *testing.T, store cache.Store, ns string, groups int) {
	t.Helper()
	get := func(i int) *corev1.ConfigMap {
		obj, ok, err := store.GetByKey(fmt.Sprintf("%s/cm-%d", ns, i))
		if err != nil || !ok {
			t.Fatalf("cm-%d not in our store (%v)", i, err)
		}
		return obj.(*corev1.ConfigMap)
	}
	for g := range groups {
		a, b := get(g), get(g+groups)
		if reflect.ValueOf(a.Labels).UnsafePointer() != reflect.ValueOf(b.Labels).UnsafePointer() ||
			reflect.ValueOf(a.Data).UnsafePointer() != reflect.ValueOf(b.Data).UnsafePointer() {
			t.Errorf("cm-%d and cm-%d have equal labels and data but hold maps of their own", g, g+groups)
		}
		if a.ManagedFields != nil {
			t.Errorf("cm-%d kept its managedFields", g)
		}
	}
}
