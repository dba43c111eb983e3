package cache

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgocache "k8s.io/client-go/tools/cache"
)

// Listing helpers over stores and indexers, client-go's own: generated
// listers and controllers call them on an informer's indexer, ours
// included.

type (
	// AppendFunc receives each object ListAll and ListAllByNamespace find.
	AppendFunc = clientgocache.AppendFunc
	// GenericLister lists and gets objects of one resource from an indexer.
	GenericLister = clientgocache.GenericLister
	// GenericNamespaceLister is GenericLister within one namespace.
	GenericNamespaceLister = clientgocache.GenericNamespaceLister
)

// ListAll is client-go's ListAll: every object of store the selector
// matches, handed to appendFn.
func ListAll(store Store, selector labels.Selector, appendFn AppendFunc) error {
	return clientgocache.ListAll(store, selector, appendFn)
}

// ListAllByNamespace is client-go's ListAllByNamespace: ListAll within one
// namespace, through the indexer's NamespaceIndex when it has one.
func ListAllByNamespace(indexer Indexer, namespace string, selector labels.Selector, appendFn AppendFunc) error {
	return clientgocache.ListAllByNamespace(indexer, namespace, selector, appendFn)
}

// NewGenericLister is client-go's NewGenericLister.
func NewGenericLister(indexer Indexer, resource schema.GroupResource) GenericLister {
	return clientgocache.NewGenericLister(indexer, resource)
}

// IndexFuncToKeyFuncAdapter is client-go's IndexFuncToKeyFuncAdapter: a
// KeyFunc from an IndexFunc that yields one value per object.
func IndexFuncToKeyFuncAdapter(indexFunc IndexFunc) KeyFunc {
	return clientgocache.IndexFuncToKeyFuncAdapter(indexFunc)
}
