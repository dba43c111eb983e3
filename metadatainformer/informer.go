package metadatainformer

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatalister"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/internal/informerset"
	"github.com/kreflector/cache/internal/listwatch"
)

// metadataKind is what this package's informers list and hold: objects'
// metadata as the server sends it for PartialObjectMetadata, with
// client-go's metadata lister.
var metadataKind = informerset.GVRKind[metadata.Interface, *metav1.PartialObjectMetadataList]{
	ListWatch: listwatch.Metadata,
	Example:   func() runtime.Object { return &metav1.PartialObjectMetadata{} },
	Lister: func(idx clientgocache.Indexer, gvr schema.GroupVersionResource) clientgocache.GenericLister {
		return metadatalister.NewRuntimeObjectShim(metadatalister.New(idx, gvr))
	},
}

// NewFilteredMetadataInformer returns this module's informer of gvr's
// objects' metadata (as *metav1.PartialObjectMetadata) in namespace (""
// for all), tweakListOptions (if not nil) applied to its LIST and WATCH
// options, with client-go's metadata lister. It is not shared: prefer a
// factory.
func NewFilteredMetadataInformer(client metadata.Interface, gvr schema.GroupVersionResource, namespace string, resyncPeriod time.Duration, indexers cache.Indexers, tweakListOptions TweakListOptionsFunc) informers.GenericInformer {
	return metadataKind.New(client, gvr, namespace, resyncPeriod, indexers, tweakListOptions, nil)
}
