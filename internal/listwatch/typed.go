package listwatch

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	restclient "k8s.io/client-go/rest"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache/internal/repr"
)

// generated is what client-go's generated resource clients (gentype)
// tell of themselves: their REST client and namespace.
type generated interface {
	GetClient() restclient.Interface
	GetNamespace() string
}

// Typed returns the ListWatch of c, a clientset's resource client of
// resource: when c is a generated client on a REST client, one whose LIST
// decodes its response on every core (NewREST), requesting exactly what
// c.List requests (protobuf preferred, as client-go's clients of built-in
// types do), and whose WATCH decodes its stream on every core
// (watchdecode); otherwise (a fake clientset's client, any other) New(c,
// tweak).
func Typed[L runtime.Object](c Client[L], resource string, tweak func(*metav1.ListOptions)) *clientgocache.ListWatch {
	g, ok := c.(generated)
	if !ok {
		return New(c, tweak)
	}
	rc := g.GetClient()
	if repr.IsNil(rc) {
		return New(c, tweak)
	}
	ns := g.GetNamespace()
	request := func(opts metav1.ListOptions) *restclient.Request {
		return rc.Get().UseProtobufAsDefault().
			NamespaceIfScoped(ns, ns != "").
			Resource(resource).
			VersionedParams(&opts, scheme.ParameterCodec).
			Timeout(timeoutOf(opts))
	}
	return NewREST(REST{Request: request, Decode: typedDecoder[L](), Watch: streamWatch(request, typedWatchDecoders)}, tweak)
}

// typedWatchDecoders decode a clientset's watch streams.
var typedWatchDecoders = mustDecoders(restclient.CodecFactoryForGeneratedClient(scheme.Scheme, scheme.Codecs).WithoutConversion())
