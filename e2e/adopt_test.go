//go:build e2e

package e2e

import (
	"reflect"
	"strconv"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache"
)

// A relist after a 410 in which every object changed, on a real
// kube-apiserver, at default options: each Secret in the store is equal
// to the server's, managedFields included, field by field, and holds the
// name, type and labels map of the version held before the relist
// (unchanged by the annotation each got), not copies of them. Secrets,
// since kube-apiserver runs without a watch cache for them, so the held
// watch goes to etcd at the compacted revision and gets 410 (see
// TestCompactionExpiresTheWatch). Runs alone (it compacts etcd).
func TestRelistAdoptsFromTheHeldVersion(t *testing.T) {
	cs := client(t, testCluster.admin)
	ns := namespace(t, cs)
	const n = 40
	for i := range n {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "s-" + strconv.Itoa(i), Labels: map[string]string{"app": "adopt", "tier": "backend"}},
			Data:       map[string][]byte{"token": []byte("index " + strconv.Itoa(i))},
		}
		if _, err := cs.CoreV1().Secrets(ns).Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	lw := &gatedLW{ListWatch: cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "secrets", ns, fields.Everything())}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	tracked := track(store)
	r := cache.NewReflectorWithOptions(lw, &corev1.Secret{}, answering{tracked, store}, cache.ReflectorOptions{Name: "adopt", UseWatchList: ptr.To(false), Backoff: quickBackoff()})
	runReflector(t, r)
	mustSync(t, r)
	// One event through the watch, so that stopping it is an ordinary
	// close the Reflector resumes from.
	mustReachRV(t, tracked, annotateSecret(t, cs, ns, "s-0", "watching"))
	before := secretsByName(store)

	release := lw.holdNextWatch(t)
	defer release()
	var last string
	for i := range n {
		last = annotateSecret(t, cs, ns, "s-"+strconv.Itoa(i), "relisted")
	}
	testCluster.compactEtcd(t)
	release()
	mustReachRV(t, tracked, last)
	if st := r.Stats(); st.Lists[cache.ListExpired] != 1 || st.ItemsReused != 0 {
		t.Errorf("want one relist for the 410 that reused nothing (every object changed): lists %v, reused %d", st.Lists, st.ItemsReused)
	}
	t.Logf("one relist for the 410: lists %v", r.Stats().Lists)
	assertEqualToServer(t, cs, ns, store, n)
	assertAdopted(t, before, secretsByName(store))
}

// answering is a tracked store that answers what it holds (Get), as the
// Reflector's users' stores do and trackingStore alone does not.
type answering struct {
	*trackingStore
	store cache.Store
}

func (a answering) Get(obj interface{}) (interface{}, bool, error) { return a.store.Get(obj) }

// annotateSecret sets an annotation of Secret name and returns its new
// resourceVersion.
func annotateSecret(t *testing.T, cs kubernetes.Interface, ns, name, value string) string {
	t.Helper()
	api := cs.CoreV1().Secrets(ns)
	s, err := api.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	metav1.SetMetaDataAnnotation(&s.ObjectMeta, "phase", value)
	if s, err = api.Update(t.Context(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return s.ResourceVersion
}

func secretsByName(s cache.Store) map[string]*corev1.Secret {
	out := map[string]*corev1.Secret{}
	for _, o := range s.List() {
		sec := o.(*corev1.Secret)
		out[sec.Name] = sec
	}
	return out
}

// assertEqualToServer checks that store holds exactly the server's n
// Secrets of ns, each deeply equal to the server's.
func assertEqualToServer(t *testing.T, cs kubernetes.Interface, ns string, store cache.Store, n int) {
	t.Helper()
	server, err := cs.CoreV1().Secrets(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ours := secretsByName(store)
	if len(server.Items) != n || len(ours) != n {
		t.Fatalf("the server holds %d Secrets, our store %d; want %d", len(server.Items), len(ours), n)
	}
	for i := range server.Items {
		want := &server.Items[i]
		if got := ours[want.Name]; !reflect.DeepEqual(got, want) {
			t.Errorf("%s differs from the server's:\n ours   %+v\n server %+v", want.Name, got, want)
		}
	}
	t.Logf("%d Secrets, each equal to the server's, managedFields included", n)
}

// assertAdopted checks that each Secret after the relist is a new version
// holding its held version's name, type and labels map.
func assertAdopted(t *testing.T, before, after map[string]*corev1.Secret) {
	t.Helper()
	for name, b := range before {
		a := after[name]
		if a == nil || a.ResourceVersion == b.ResourceVersion {
			t.Fatalf("%s: not a new version after the relist", name)
		}
		if unsafe.StringData(a.Name) != unsafe.StringData(b.Name) ||
			unsafe.StringData(string(a.Type)) != unsafe.StringData(string(b.Type)) ||
			reflect.ValueOf(a.Labels).UnsafePointer() != reflect.ValueOf(b.Labels).UnsafePointer() {
			t.Errorf("%s: its name, type or labels are copies, not the held version's", name)
		}
	}
	t.Logf("%d Secrets, every one a new version holding its held version's name, type and labels", len(before))
}
