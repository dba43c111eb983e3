package listwatch

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/features"
	"k8s.io/client-go/metadata"
	restclient "k8s.io/client-go/rest"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache/internal/repr"
)

// metadataListAccept and metadataAccept are what client-go's metadata
// client accepts for a LIST and for a WATCH.
const (
	metadataListAccept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1," +
		"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
	metadataAccept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1," +
		"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
)

// dynamicWatchDecoders and metadataWatchDecoders decode the dynamic and
// metadata clients' watch streams, negotiated from their serializers.
var (
	dynamicWatchDecoders  = mustDecoders(dynamic.ConfigFor(&restclient.Config{}).NegotiatedSerializer)
	metadataWatchDecoders = mustDecoders(metadata.ConfigFor(&restclient.Config{}).NegotiatedSerializer)
)

// timeoutOf is the request timeout opts ask for.
func timeoutOf(opts metav1.ListOptions) time.Duration {
	if opts.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*opts.TimeoutSeconds) * time.Second
}

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
// resource client. Its WATCH decodes its stream on every core too.
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
	request := func(opts metav1.ListOptions) *restclient.Request {
		return rest.Get().AbsPath(segments(gvr, namespace)...).
			SpecificallyVersionedParams(&opts, parameterCodec, schema.GroupVersion{Version: "v1"})
	}
	return NewREST(REST{Request: request, Decode: unstructuredDecoder(), Watch: streamWatch(request, dynamicWatchDecoders)}, tweak)
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
	request := func(opts metav1.ListOptions, accept string) *restclient.Request {
		return rest.Get().AbsPath(segments(gvr, namespace)...).
			SetHeader("Accept", accept).
			SpecificallyVersionedParams(&opts, parameterCodec, schema.GroupVersion{Version: "v1"})
	}
	// As client-go's metadata client: a WATCH has the options' timeout, a
	// LIST does not.
	list := func(opts metav1.ListOptions) *restclient.Request { return request(opts, metadataListAccept) }
	watch := func(opts metav1.ListOptions) *restclient.Request {
		return request(opts, metadataAccept).Timeout(timeoutOf(opts))
	}
	return NewREST(REST{Request: list, Decode: metadataDecoder(), Watch: streamWatch(watch, metadataWatchDecoders)}, tweak)
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
