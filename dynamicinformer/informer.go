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
	"github.com/kreflector/cache/internal/listwatch"
)

// NewFilteredDynamicInformer returns this module's informer of gvr's
// objects (as *unstructured.Unstructured) in namespace ("" for all),
// tweak (if not nil) applied to its LIST and WATCH options, with
// client-go's dynamic lister. It is not shared: prefer a factory.
func NewFilteredDynamicInformer(client dynamic.Interface, gvr schema.GroupVersionResource, namespace string, resyncPeriod time.Duration, indexers cache.Indexers, tweak TweakListOptionsFunc) informers.GenericInformer {
	rc := client.Resource(gvr).Namespace(namespace)
	lw := listwatch.New(rc, tweak)
	inf := cache.NewSharedIndexInformerWithOptions(clientgocache.ToListWatcherWithWatchListSemantics(lw, client), &unstructured.Unstructured{}, cache.SharedIndexInformerOptions{
		ResyncPeriod:      resyncPeriod,
		Indexers:          indexers,
		ObjectDescription: gvr.String(),
	})
	return &dynamicInformer{informer: inf, gvr: gvr}
}

// dynamicInformer is NewFilteredDynamicInformer's result.
type dynamicInformer struct {
	informer clientgocache.SharedIndexInformer
	gvr      schema.GroupVersionResource
}

var _ informers.GenericInformer = &dynamicInformer{}

// Informer returns this module's informer.
func (d *dynamicInformer) Informer() clientgocache.SharedIndexInformer { return d.informer }

// Lister returns client-go's dynamic lister over the informer's indexer.
func (d *dynamicInformer) Lister() clientgocache.GenericLister {
	return dynamiclister.NewRuntimeObjectShim(dynamiclister.New(d.informer.GetIndexer(), d.gvr))
}
