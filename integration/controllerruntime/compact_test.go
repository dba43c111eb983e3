package controllerruntime

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	kcache "github.com/kreflector/cache"
)

// The one-line hook with Compact: the Manager reconciles every ConfigMap
// through compact informers, its client reads them back equal to the
// server's, and the informer holds them as bytes.
func TestManagerOnCompactInformers(t *testing.T) {
	srv := newHTTPServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	before := names("before", 30)
	createConfigMaps(ctx, t, cs, "ns", before)
	compact := kcache.NewSharedIndexInformerWith(kcache.ReflectorOptions{Compact: &kcache.CompactOptions{}})
	r := startManagerWith(t, srv.RESTConfig(), waitLimit, compact)
	r.waitReconciled(ctx, t, "ns", before)
	r.checkInformerIsOurs(ctx, t)
	var got corev1.ConfigMap
	if err := r.mgr.GetClient().Get(ctx, types.NamespacedName{Namespace: "ns", Name: before[0]}, &got); err != nil {
		t.Fatal(err)
	}
	want, err := cs.CoreV1().ConfigMaps("ns").Get(ctx, before[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.TypeMeta = want.TypeMeta // controller-runtime's client sets the GVK on what it reads
	if !reflect.DeepEqual(&got, want) {
		t.Fatalf("the cache's object differs from the server's:\n%+v\n%+v", &got, want)
	}
	inf, err := r.mgr.GetCache().GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	if st := inf.(kcache.InformerHealthReporter).Stats().Store; st == nil || st.Encoded != len(before) {
		t.Fatalf("compact store's stats: %+v", st)
	}
}
