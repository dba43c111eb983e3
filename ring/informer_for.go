package ring

import (
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
)

// NewInformerFor returns a constructor with NewInformer's signature that
// makes ring informers for the given types only, and this module's plain
// (unsharded) informers for every other: what a controller sharded by uid
// needs when it also watches objects it owns, whose uids hash elsewhere.
// The primary type follows the ring; the owned types are cached whole on
// every replica, their events map to the owner's key as usual, and the
// reconciler drops keys this replica does not handle (Informer.HandlesKey,
// or the controller-runtime integration's Reconciler). A type matches by
// its Go type, and for *unstructured.Unstructured and
// *metav1.PartialObjectMetadata also by apiVersion and kind.
//
//	crcache.Options{NewInformer: r.NewInformerFor(&appsv1.Deployment{})}
func (r *Ring) NewInformerFor(objs ...runtime.Object) func(clientgocache.ListerWatcher, runtime.Object, time.Duration, clientgocache.Indexers) clientgocache.SharedIndexInformer {
	return func(lw clientgocache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers clientgocache.Indexers) clientgocache.SharedIndexInformer {
		for _, o := range objs {
			if sameType(o, obj) {
				return r.NewInformer(lw, obj, resync, indexers)
			}
		}
		return cache.NewSharedIndexInformer(lw, obj, resync, indexers)
	}
}

// sameType says whether a and b are objects of one type.
func sameType(a, b runtime.Object) bool {
	if reflect.TypeOf(a) != reflect.TypeOf(b) {
		return false
	}
	ga, gb := a.GetObjectKind().GroupVersionKind(), b.GetObjectKind().GroupVersionKind()
	return ga == gb || ga == (schema.GroupVersionKind{}) && !generic(a)
}

// generic says whether objects of a's Go type carry their kind in the
// value (unstructured and metadata-only objects), so that two values of
// the type may be of different kinds.
func generic(a runtime.Object) bool {
	switch reflect.TypeOf(a).String() {
	case "*unstructured.Unstructured", "*v1.PartialObjectMetadata":
		return true
	}
	return false
}
