package dynamicinformer

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamiclister"
	"k8s.io/client-go/informers"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/internal/informerset"
)

// NewFilteredDynamicInformer returns this module's informer of gvr's
// objects (as *unstructured.Unstructured) in namespace ("" for all),
// tweak (if not nil) applied to its LIST and WATCH options, with
// client-go's dynamic lister. It is not shared: prefer a factory.
func NewFilteredDynamicInformer(client dynamic.Interface, gvr schema.GroupVersionResource, namespace string, resyncPeriod time.Duration, indexers cache.Indexers, tweak TweakListOptionsFunc) informers.GenericInformer {
	return newInformer(client, gvr, namespace, resyncPeriod, indexers, tweak, nil)
}

// newInformer is NewFilteredDynamicInformer, built by build if not nil.
func newInformer(client dynamic.Interface, gvr schema.GroupVersionResource, namespace string, resync time.Duration, indexers cache.Indexers, tweak TweakListOptionsFunc, build NewInformerFunc) informers.GenericInformer {
	return informerset.NewGVRInformer(client.Resource(gvr).Namespace(namespace), tweak, informerset.GVRInformer{
		GVR: gvr, Client: client, Example: &unstructured.Unstructured{},
		Resync: resync, Indexers: indexers, NewInformer: build,
		Lister: func(idx clientgocache.Indexer) clientgocache.GenericLister {
			return dynamiclister.NewRuntimeObjectShim(dynamiclister.New(idx, gvr))
		},
	})
}
