package cachetest

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// maxBodyBytes bounds request bodies, as kube-apiserver bounds them (3 MiB).
const maxBodyBytes = 3 << 20

// wire is how a resource's objects look over HTTP: the group, version and
// kind of its objects and of its lists.
type wire struct {
	obj, list schema.GroupVersionKind
}

// wireOf finds the kinds of t's objects on the wire. Unstructured types
// carry their own; typed objects must be registered in client-go's scheme
// (k8s.io/client-go/kubernetes/scheme) under the type's group, else t
// cannot be served over HTTP and the error says why.
func wireOf(t *resourceType) (wire, error) {
	if !t.gvk.Empty() {
		return wire{obj: t.gvk, list: t.gvk.GroupVersion().WithKind(t.gvk.Kind + "List")}, nil
	}
	obj, err := schemeKind(t.objType, t.gr.Group)
	if err != nil {
		return wire{}, err
	}
	list, err := schemeKind(t.listType, t.gr.Group)
	if err != nil {
		return wire{}, err
	}
	return wire{obj: obj, list: list}, nil
}

// schemeKind is the external kind client-go's scheme knows typ by in group.
func schemeKind(typ reflect.Type, group string) (schema.GroupVersionKind, error) {
	obj := reflect.New(typ.Elem()).Interface().(runtime.Object)
	kinds, _, err := scheme.Scheme.ObjectKinds(obj)
	if err == nil {
		for _, k := range kinds {
			if k.Group == group && k.Version != runtime.APIVersionInternal {
				return k, nil
			}
		}
	}
	return schema.GroupVersionKind{}, fmt.Errorf("cachetest: %v is not registered in client-go's scheme in group %q, "+
		"so it cannot be served over HTTP; serve it as *unstructured.Unstructured instead", typ, group)
}

// statusKind is the kind of metav1.Status on the wire, as kube-apiserver
// sends it.
var statusKind = schema.GroupVersionKind{Version: "v1", Kind: "Status"}

// encode renders obj as JSON with apiVersion and kind set to gvk. It sets
// them on obj, which must be the caller's own copy.
func encode(obj runtime.Object, gvk schema.GroupVersionKind) ([]byte, error) {
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return json.Marshal(obj)
}

// decodeBody reads a JSON request body into a new object of t. A body
// naming another apiVersion or kind than the resource's is a bad request;
// one naming none is taken as the resource's kind.
func decodeBody(r *http.Request, t *resourceType, kind schema.GroupVersionKind) (runtime.Object, error) {
	data, err := readBody(r)
	if err != nil {
		return nil, err
	}
	obj := t.newObject()
	if err := json.Unmarshal(data, obj); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("cachetest: the request body is not a valid %s: %v", kind.Kind, err))
	}
	if got := obj.GetObjectKind().GroupVersionKind(); !got.Empty() && got != kind {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("cachetest: the request body is a %s, the URL serves %s", got, kind))
	}
	// Typed objects are stored without apiVersion and kind, as those
	// created in process are (and as kube-apiserver's decoding leaves
	// them); Unstructured ones carry theirs.
	if t.gvk.Empty() {
		obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	}
	return obj, nil
}

// readBody reads a request body of at most maxBodyBytes, refusing media
// types other than JSON with 415 and larger bodies with 413.
func readBody(r *http.Request) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			return nil, newStatusError(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
				fmt.Sprintf("cachetest: the body's content type %q is not supported: only application/json is served", ct))
		}
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("cachetest: reading the request body: %v", err))
	}
	if len(data) > maxBodyBytes {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", maxBodyBytes))
	}
	return data, nil
}

// decodeQuery decodes the request's query parameters into opts (a
// *metav1.ListOptions, GetOptions, CreateOptions, ...), as client-go
// encodes them (with metav1.ParameterCodec or its scheme's). It uses
// client-go's scheme's parameter codec: metav1.ParameterCodec can encode
// but not decode, its scheme having no conversions from url.Values.
func decodeQuery(q url.Values, opts runtime.Object) error {
	if err := scheme.ParameterCodec.DecodeParameters(q, schema.GroupVersion{Version: "v1"}, opts); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("cachetest: invalid query parameters: %v", err))
	}
	return nil
}

// acceptsJSON says whether the Accept header allows a plain JSON answer
// (no header at all does). Entries asking for another rendering of JSON
// (e.g. "as=Table") do not count.
func acceptsJSON(accept string) bool {
	if accept == "" {
		return true
	}
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case "*/*", "application/*":
			return true
		case "application/json":
			if params["as"] == "" {
				return true
			}
		}
	}
	return false
}

// newStatusError builds an error status for codes apierrors has no
// constructor for.
func newStatusError(code int32, reason metav1.StatusReason, msg string) *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    code,
		Reason:  reason,
		Message: msg,
	}}
}
