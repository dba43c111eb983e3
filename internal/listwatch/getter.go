package listwatch

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	restclient "k8s.io/client-go/rest"
	clientgocache "k8s.io/client-go/tools/cache"
)

// FromRESTClient returns the ListWatch of resource in namespace on c, a
// REST client of one of client-go's built-in group versions (as
// clientset.CoreV1().RESTClient() is), whose LIST decodes its response
// and its WATCH stream on every core (NewREST, watchdecode); request builds a LIST's or WATCH's request as
// cache.NewFilteredListWatchFromClient does. ok is false when c is not
// such a client or resource is not a kind of client-go's scheme in c's
// group version: the caller then builds the plain ListWatch.
//
// The list is decoded as a clientset's client decodes it, with client-go's
// scheme, without conversion (the list's own kind and apiVersion are
// cleared); c's own serializer is not visible from outside it.
func FromRESTClient(c restclient.Interface, resource string, request func(opts metav1.ListOptions) *restclient.Request, tweak func(*metav1.ListOptions)) (lw *clientgocache.ListWatch, ok bool) {
	rc, isREST := c.(*restclient.RESTClient)
	if !isREST || rc == nil {
		return nil, false
	}
	example, found := listTypeOf(rc.APIVersion(), resource)
	if !found {
		return nil, false
	}
	return NewREST(REST{
		Request: func(opts metav1.ListOptions) *restclient.Request { return request(opts) },
		Decode:  typedDecoderOf(example),
		Watch:   streamWatch(request, typedWatchDecoders),
	}, tweak), true
}

// listTypeOf returns an empty list of resource in gv, if client-go's
// scheme has a kind whose resource that is and a list of that kind.
func listTypeOf(gv schema.GroupVersion, resource string) (runtime.Object, bool) {
	for kind := range scheme.Scheme.KnownTypes(gv) {
		gvk := gv.WithKind(kind)
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		if plural.Resource != resource || !scheme.Scheme.Recognizes(gv.WithKind(kind+"List")) {
			continue
		}
		list, err := scheme.Scheme.New(gv.WithKind(kind + "List"))
		return list, err == nil
	}
	return nil, false
}
