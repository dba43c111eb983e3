package listwatch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"

	"k8s.io/apimachinery/pkg/api/errors"
	metascheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// protobufMagic starts every Kubernetes protobuf body.
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// typedDecoder decodes a clientset's LIST body into a new L, whole, as
// Result.Into does.
func typedDecoder[L runtime.Object]() ListDecoder {
	return typedDecoderOf(func() runtime.Object { return reflect.New(reflect.TypeFor[L]().Elem()).Interface().(L) })
}

// typedDecoderOf is typedDecoder for the lists newList makes.
func typedDecoderOf(newList func() runtime.Object) ListDecoder {
	codecs := scheme.Codecs.WithoutConversion()
	return func(_ context.Context, body io.Reader, _ int, meta func(metav1.ListMeta), _ func(runtime.Object)) (runtime.Object, error) {
		data, err := io.ReadAll(body)
		if err != nil {
			return nil, err
		}
		mediaType := runtime.ContentTypeJSON
		if bytes.HasPrefix(data, protobufMagic) {
			mediaType = runtime.ContentTypeProtobuf
		}
		info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaType)
		if !ok {
			return nil, fmt.Errorf("serializer for %s doesn't exist", mediaType)
		}
		list := newList()
		out, _, err := codecs.DecoderToVersion(info.Serializer, nil).Decode(data, nil, list)
		if err != nil {
			return nil, err
		}
		if st, ok := out.(*metav1.Status); ok && st.Status != metav1.StatusSuccess {
			return nil, errors.FromObject(st)
		}
		if m, ok := out.(metav1.ListInterface); ok && meta != nil {
			meta(metav1.ListMeta{ResourceVersion: m.GetResourceVersion(), Continue: m.GetContinue(), RemainingItemCount: m.GetRemainingItemCount()})
		}
		return out, nil
	}
}

// unstructuredDecoder decodes a dynamic client's LIST body, whole.
func unstructuredDecoder() ListDecoder {
	return func(_ context.Context, body io.Reader, _ int, _ func(metav1.ListMeta), _ func(runtime.Object)) (runtime.Object, error) {
		data, err := io.ReadAll(body)
		if err != nil {
			return nil, err
		}
		list := &unstructured.UnstructuredList{}
		_, _, err = unstructured.UnstructuredJSONScheme.Decode(data, nil, list)
		return list, err
	}
}

// metadataDecoder decodes a metadata client's LIST body, whole.
func metadataDecoder() ListDecoder {
	codecs := metascheme.Codecs
	return func(_ context.Context, body io.Reader, _ int, _ func(metav1.ListMeta), _ func(runtime.Object)) (runtime.Object, error) {
		data, err := io.ReadAll(body)
		if err != nil {
			return nil, err
		}
		obj, err := runtime.Decode(codecs.UniversalDeserializer(), data)
		if runtime.IsNotRegisteredError(err) {
			// A server that ignored the Accept header's "as=": client-go's
			// metadata client reads the list's metadata from the JSON.
			var partial metav1.PartialObjectMetadataList
			if err := json.Unmarshal(data, &partial); err != nil {
				return nil, fmt.Errorf("unable to decode returned object as PartialObjectMetadataList: %v", err)
			}
			partial.TypeMeta = metav1.TypeMeta{}
			return &partial, nil
		}
		if err != nil {
			return nil, err
		}
		if _, ok := obj.(*metav1.PartialObjectMetadataList); !ok {
			return nil, fmt.Errorf("unexpected object, expected PartialObjectMetadata but got %T", obj)
		}
		return obj, nil
	}
}
