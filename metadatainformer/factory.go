// Package metadatainformer is a drop-in for client-go's
// metadata/metadatainformer whose factory hands out this module's
// informers of metadata-only objects (*metav1.PartialObjectMetadata, for
// any GVR): change the import path. Each informer type-asserts to
// cache.InformerHealthReporter; the factory's WaitForSync covers all of
// them at once; WithNewInformer plugs in a ring's informers. Listers are
// client-go's metadatalister.
package metadatainformer

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	clientgometadatainformer "k8s.io/client-go/metadata/metadatainformer"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/internal/informerset"
)

// TweakListOptionsFunc changes the options of every LIST and WATCH
// (client-go's type).
type TweakListOptionsFunc = clientgometadatainformer.TweakListOptionsFunc

// SharedInformerFactory is client-go's, with a wait that names the
// informers not synced.
type SharedInformerFactory interface {
	clientgometadatainformer.SharedInformerFactory
	// WaitForSync blocks until every informer requested so far has synced
	// (nil), or ctx ends or each one not synced has stopped; its error
	// then names each GVR not synced, with its informer's WaitForSync
	// error (the last list/watch error; cache.ErrStopped if it stopped)
	// or that it was requested after the last Start.
	WaitForSync(ctx context.Context) error
}

// NewInformerFunc has client-go's NewSharedIndexInformer signature (and
// controller-runtime's cache.Options.NewInformer type), as ring.Ring's
// NewInformer has.
type NewInformerFunc = informerset.NewInformerFunc

// SharedInformerOption configures NewSharedInformerFactoryWithOptions.
// It has the shape of client-go's, whose parameter is client-go's
// unexported factory, so the type is this package's own.
type SharedInformerOption func(*factory) *factory

// factory is informerset's GVR factory of PartialObjectMetadata; its
// options set the GVRConfig.
type factory struct {
	*informerset.GVRFactory[metadata.Interface, *metav1.PartialObjectMetadataList]
}

var (
	_ clientgometadatainformer.SharedInformerFactory = &factory{}
	_ SharedInformerFactory                          = &factory{}
)

// option is a SharedInformerOption that changes the factory's
// configuration with set.
func option(set func(*informerset.GVRConfig)) SharedInformerOption {
	return func(f *factory) *factory {
		set(&f.GVRConfig)
		return f
	}
}

// WithTransform sets transform on every informer the factory builds.
func WithTransform(transform clientgocache.TransformFunc) SharedInformerOption {
	return option(func(c *informerset.GVRConfig) { c.Transform = transform })
}

// WithNamespace limits the factory's informers to namespace (ours:
// client-go has it only as NewFilteredSharedInformerFactory's argument).
func WithNamespace(namespace string) SharedInformerOption {
	return option(func(c *informerset.GVRConfig) { c.Namespace = namespace })
}

// WithTweakListOptions applies tweak to every LIST and WATCH (ours, as
// WithNamespace).
func WithTweakListOptions(tweak TweakListOptionsFunc) SharedInformerOption {
	return option(func(c *informerset.GVRConfig) { c.Tweak = tweak })
}

// WithReflectorOptions sets o (ReflectorOptions.Compact for compact
// stores, the lean options, ...) on every informer the factory builds
// that takes Reflector options (cache.ReflectorConfigurable: this
// module's). A ring's informers (WithNewInformer with Ring.NewInformer)
// take theirs from ring.Config.ReflectorOptions instead.
func WithReflectorOptions(o cache.ReflectorOptions) SharedInformerOption {
	return option(func(c *informerset.GVRConfig) { c.Reflector = &o })
}

// WithNewInformer makes newInformer build every informer of the factory
// (given the GVR's ListerWatcher of PartialObjectMetadata, namespace,
// tweak and WatchList semantics applied; a *metav1.PartialObjectMetadata;
// the resync period and the namespace index) instead of this module's
// constructor; the factory then sets its transform. With a ring's
// NewInformer, every informer of the factory is a ring informer. The
// factory's WaitForSync uses the WaitForSync of what it builds when that
// type-asserts to cache.InformerHealthReporter (ring informers do), else
// waits for its HasSynced until ctx ends.
func WithNewInformer(newInformer NewInformerFunc) SharedInformerOption {
	return option(func(c *informerset.GVRConfig) { c.NewInformer = newInformer })
}

// NewSharedInformerFactory returns a factory for all namespaces whose
// informers resync every defaultResync (0: never).
func NewSharedInformerFactory(client metadata.Interface, defaultResync time.Duration) SharedInformerFactory {
	return NewSharedInformerFactoryWithOptions(client, defaultResync)
}

// NewFilteredSharedInformerFactory returns a factory whose informers
// watch namespace only and apply tweakListOptions (if not nil) to their
// LIST and WATCH options.
func NewFilteredSharedInformerFactory(client metadata.Interface, defaultResync time.Duration, namespace string, tweakListOptions TweakListOptionsFunc) SharedInformerFactory {
	return NewSharedInformerFactoryWithOptions(client, defaultResync, WithNamespace(namespace), WithTweakListOptions(tweakListOptions))
}

// NewSharedInformerFactoryWithOptions returns a factory for all
// namespaces whose informers resync every defaultResync (0: never),
// configured by options in order.
func NewSharedInformerFactoryWithOptions(client metadata.Interface, defaultResync time.Duration, options ...SharedInformerOption) SharedInformerFactory {
	f := &factory{informerset.NewGVRFactory(client, metadataKind, defaultResync)}
	for _, opt := range options {
		f = opt(f)
	}
	return f
}
