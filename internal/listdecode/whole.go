package listdecode

import (
	"encoding/json"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Media types as the sniffing names them.
const (
	mediaJSON     = runtime.ContentTypeJSON
	mediaProtobuf = runtime.ContentTypeProtobuf
	mediaCBOR     = runtime.ContentTypeCBOR
)

// whole decodes a whole body of the given media type exactly as the
// plan's client does after reading a 200 response: a clientset's
// List (Result.Into on a new list), the dynamic client's List (Into on an
// UnstructuredList) or the metadata client's List (Result.Get, then its
// fallback to encoding/json when the kind is not registered). listed
// reports whether the result is the list the body decoded into (false: a
// clientset's Into left its list as it was, for a body of another kind
// that is not a failure Status).
func (p *plan) whole(media string, body []byte) (obj runtime.Object, listed bool, err error) {
	dec, err := runtime.NewClientNegotiator(p.ns, schema.GroupVersion{}).Decoder(media, nil)
	if err != nil {
		return nil, false, fmt.Errorf("serializer for %s doesn't exist", media)
	}
	if p.mode == metadataMode {
		return p.wholeMetadata(dec, body)
	}
	if len(body) == 0 {
		return nil, false, fmt.Errorf("0-length response with status code: %d and content type: %s", http.StatusOK, media)
	}
	into := p.newList()
	if p.mode == unstructuredMode {
		into = &unstructured.UnstructuredList{}
	}
	out, _, err := dec.Decode(body, nil, into)
	if err != nil {
		return nil, false, err
	}
	if out == into {
		return into, true, nil
	}
	if err := failure(out); err != nil {
		return nil, false, err
	}
	return into, false, nil
}

// wholeMetadata is the metadata client's List after its request: Get,
// and encoding/json on the body when Get's kind is not registered.
func (p *plan) wholeMetadata(dec runtime.Decoder, body []byte) (runtime.Object, bool, error) {
	out, _, err := dec.Decode(body, nil, nil)
	if err == nil {
		err = failure(out)
	}
	if runtime.IsNotRegisteredError(err) {
		var partial metav1.PartialObjectMetadataList
		if err := json.Unmarshal(body, &partial); err != nil {
			return nil, false, fmt.Errorf("unable to decode returned object as PartialObjectMetadataList: %v", err)
		}
		partial.TypeMeta = metav1.TypeMeta{}
		return &partial, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	list, ok := out.(*metav1.PartialObjectMetadataList)
	if !ok {
		return nil, false, fmt.Errorf("unexpected object, expected PartialObjectMetadata but got %T", out)
	}
	return list, true, nil
}

// failure is the error Result.Get and Into make of a decoded object: a
// Status other than Success is an error.
func failure(out runtime.Object) error {
	if s, ok := out.(*metav1.Status); ok && s.Status != metav1.StatusSuccess {
		return apierrors.FromObject(s)
	}
	return nil
}
