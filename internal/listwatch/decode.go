package listwatch

import (
	"context"
	"io"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kreflector/cache/internal/listdecode"
)

// decoderFor is the ListDecoder of target's client (see listdecode).
func decoderFor(target listdecode.Target) ListDecoder {
	return func(ctx context.Context, body io.Reader, o listdecode.Options) (runtime.Object, error) {
		return listdecode.Decode(ctx, body, target, o)
	}
}

// typedDecoder decodes a clientset's LIST body into a new L.
func typedDecoder[L runtime.Object]() ListDecoder {
	return decoderFor(listdecode.Target{Typed: reflect.New(reflect.TypeFor[L]().Elem()).Interface().(L)})
}

// typedDecoderOf decodes a clientset's LIST body into a list of the type
// of example.
func typedDecoderOf(example runtime.Object) ListDecoder {
	return decoderFor(listdecode.Target{Typed: example})
}

// unstructuredDecoder decodes a dynamic client's LIST body.
func unstructuredDecoder() ListDecoder { return decoderFor(listdecode.Target{Unstructured: true}) }

// metadataDecoder decodes a metadata client's LIST body.
func metadataDecoder() ListDecoder { return decoderFor(listdecode.Target{Metadata: true}) }
