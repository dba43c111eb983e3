package ring

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgocache "k8s.io/client-go/tools/cache"
)

func TestNewInformerForRingsOnlyTheGivenTypes(t *testing.T) {
	r := newTestRing(t)
	deploy := &unstructured.Unstructured{}
	deploy.SetAPIVersion("apps/v1")
	deploy.SetKind("Deployment")
	pods := &unstructured.Unstructured{}
	pods.SetAPIVersion("v1")
	pods.SetKind("Pod")
	meta := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}}
	newInformer := r.NewInformerFor(&appsv1.Deployment{}, deploy, meta)
	lw := &clientgocache.ListWatch{}
	for _, tc := range []struct {
		obj  runtime.Object
		ring bool
	}{
		{&appsv1.Deployment{}, true},
		{&corev1.Pod{}, false},
		{deploy.DeepCopy(), true},
		{pods, false},
		{meta.DeepCopy(), true},
		{&metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}}, false},
	} {
		_, isRing := newInformer(lw, tc.obj, 0, clientgocache.Indexers{}).(*Informer)
		if isRing != tc.ring {
			t.Errorf("%T %v: ring informer %v, want %v", tc.obj, tc.obj.GetObjectKind().GroupVersionKind(), isRing, tc.ring)
		}
	}
}
