package informers

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgocache "k8s.io/client-go/tools/cache"
)

// genericInformer is ForResource's result.
type genericInformer struct {
	informer clientgocache.SharedIndexInformer
	resource schema.GroupResource
}

func (g *genericInformer) Informer() clientgocache.SharedIndexInformer { return g.informer }

func (g *genericInformer) Lister() clientgocache.GenericLister {
	return clientgocache.NewGenericLister(g.informer.GetIndexer(), g.resource)
}

// ForResource returns the informer of a built-in resource (every GVR
// client-go's ForResource knows) and an error for any other.
func (f *factory) ForResource(gvr schema.GroupVersionResource) (GenericInformer, error) {
	informer, ok := builtin[gvr]
	if !ok {
		return nil, fmt.Errorf("no informer found for %v", gvr)
	}
	return &genericInformer{informer: informer(f), resource: gvr.GroupResource()}, nil
}
