package listwatch

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/features"
	"k8s.io/client-go/metadata"
	restclient "k8s.io/client-go/rest"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache/internal/repr"
)

// metadataListAccept is what client-go's metadata client accepts for a
// LIST.
const metadataListAccept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1," +
	"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"

// parameterCodec encodes ListOptions as the dynamic and metadata clients
// do: meta.k8s.io/v1's conversion to query parameters.
var parameterCodec = func() runtime.ParameterCodec {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return runtime.NewParameterCodec(s)
}()

// Dynamic returns the ListWatch of gvr in namespace through c, a dynamic
// client: one whose LIST decodes its response on every core (NewREST)
// when c is client-go's DynamicClient on a REST client and the client
// asks for JSON only (client-go's CBOR gates off); otherwise New over c's
// resource client. Its WATCH is the resource client's.
func Dynamic(c dynamic.Interface, gvr schema.GroupVersionResource, namespace string, tweak func(*metav1.ListOptions)) *clientgocache.ListWatch {
	rc := c.Resource(gvr).Namespace(namespace)
	dc, ok := c.(*dynamic.DynamicClient)
	if !ok || !validNamespace(namespace) || features.FeatureGates().Enabled(features.ClientsAllowCBOR) {
		return New[*unstructured.UnstructuredList](rc, tweak)
	}
	rest, ok := repr.Field[restclient.Interface](dc, "client")
	if !ok || repr.IsNil(rest) {
		return New[*unstructured.UnstructuredList](rc, tweak)
	}
	return NewREST(REST{
		Request: func(opts metav1.ListOptions) *restclient.Request {
			return rest.Get().AbsPath(segments(gvr, namespace)...).
				SpecificallyVersionedParams(&opts, parameterCodec, schema.GroupVersion{Version: "v1"})
		},
		Decode: unstructuredDecoder(),
		Watch:  func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return rc.Watch(ctx, o) },
	}, tweak)
}

// Metadata is Dynamic for c, a metadata client: NewREST when c is
// client-go's metadata Client on a REST client.
func Metadata(c metadata.Interface, gvr schema.GroupVersionResource, namespace string, tweak func(*metav1.ListOptions)) *clientgocache.ListWatch {
	rc := c.Resource(gvr).Namespace(namespace)
	mc, ok := c.(*metadata.Client)
	if !ok || !validNamespace(namespace) {
		return New[*metav1.PartialObjectMetadataList](rc, tweak)
	}
	rest, ok := repr.Field[*restclient.RESTClient](mc, "client")
	if !ok || rest == nil {
		return New[*metav1.PartialObjectMetadataList](rc, tweak)
	}
	return NewREST(REST{
		Request: func(opts metav1.ListOptions) *restclient.Request {
			return rest.Get().AbsPath(segments(gvr, namespace)...).
				SetHeader("Accept", metadataListAccept).
				SpecificallyVersionedParams(&opts, parameterCodec, schema.GroupVersion{Version: "v1"})
		},
		Decode: metadataDecoder(),
		Watch:  func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return rc.Watch(ctx, o) },
	}, tweak)
}

// segments is the path of gvr's collection in namespace ("" for all or
// for a cluster-scoped resource), as the dynamic and metadata clients
// build it.
func segments(gvr schema.GroupVersionResource, namespace string) []string {
	s := []string{"api"}
	if gvr.Group != "" {
		s = []string{"apis", gvr.Group}
	}
	s = append(s, gvr.Version)
	if namespace != "" {
		s = append(s, "namespaces", namespace)
	}
	return append(s, gvr.Resource)
}

// validNamespace says whether namespace can be a path segment; the
// clients' own List reports the error of one that cannot.
func validNamespace(namespace string) bool {
	return namespace == "" || len(restclient.IsValidPathSegmentName(namespace)) == 0
}
