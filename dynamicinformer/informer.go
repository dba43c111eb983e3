package dynamicinformer

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamiclister"
	"k8s.io/client-go/informers"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/internal/informerset"
	"github.com/kreflector/cache/internal/listwatch"
)

// unstructuredKind is what this package's informers list and hold:
// unstructured objects, with client-go's dynamic lister.
var unstructuredKind = informerset.GVRKind[dynamic.Interface, *unstructured.UnstructuredList]{
	ListWatch: listwatch.Dynamic,
	Example:   func() runtime.Object { return &unstructured.Unstructured{} },
	Lister: func(idx clientgocache.Indexer, gvr schema.GroupVersionResource) clientgocache.GenericLister {
		return dynamiclister.NewRuntimeObjectShim(dynamiclister.New(idx, gvr))
	},
}

// NewFilteredDynamicInformer returns this module's informer of gvr's
// objects (as *unstructured.Unstructured) in namespace ("" for all),
// tweak (if not nil) applied to its LIST and WATCH options, with
// client-go's dynamic lister. It is not shared: prefer a factory.
func NewFilteredDynamicInformer(client dynamic.Interface, gvr schema.GroupVersionResource, namespace string, resyncPeriod time.Duration, indexers cache.Indexers, tweak TweakListOptionsFunc) informers.GenericInformer {
	return unstructuredKind.New(client, gvr, namespace, resyncPeriod, indexers, tweak, nil)
}
