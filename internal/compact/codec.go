package compact

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
)

// ErrCorrupt is wrapped by Decode's error for bytes Encode did not make.
var ErrCorrupt = errors.New("compact: corrupt record")

// Codec turns the objects of one Go type into bytes and back. Encode
// never keeps obj; Decode returns a new object each call, sharing no
// memory with b.
type Codec struct {
	typ  reflect.Type // the pointer type of the objects
	kind codecKind
}

type codecKind uint8

const (
	protoKind codecKind = iota + 1
	cborKind
)

// protoObject is what gogo-protobuf generates for Kubernetes' API types.
type protoObject interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
	Unmarshal([]byte) error
}

var codecs sync.Map // reflect.Type → *Codec (nil: none)

// For returns the Codec of objects of obj's Go type, or nil when the type
// has none: it is not a pointer to one of Kubernetes' own API types nor
// *unstructured.Unstructured.
func For(obj any) *Codec {
	t := reflect.TypeOf(obj)
	if t == nil {
		return nil
	}
	if c, ok := codecs.Load(t); ok {
		return c.(*Codec)
	}
	c := codecOf(t)
	codecs.Store(t, c)
	return c
}

func codecOf(t reflect.Type) *Codec {
	if t == reflect.TypeFor[*unstructured.Unstructured]() {
		return &Codec{typ: t, kind: cborKind}
	}
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct || !kubernetesAPI(t.Elem().PkgPath()) {
		return nil
	}
	if !t.Implements(reflect.TypeFor[protoObject]()) {
		return nil
	}
	return &Codec{typ: t, kind: protoKind}
}

// kubernetesAPI says whether pkg holds Kubernetes' own generated API
// types, whose protobuf code is the wire format and decodes into a fresh
// object whole. Another package's Unmarshal might merge or be partial.
func kubernetesAPI(pkg string) bool {
	return strings.HasPrefix(pkg, "k8s.io/api/") || strings.HasPrefix(pkg, "k8s.io/apimachinery/pkg/apis/")
}

// Type is the Go type of the objects c encodes.
func (c *Codec) Type() reflect.Type { return c.typ }

// Encode appends obj's encoding to dst. obj must be of c's type.
func (c *Codec) Encode(dst []byte, obj any) ([]byte, error) {
	if reflect.TypeOf(obj) != c.typ {
		return dst, fmt.Errorf("compact: encoding %T with the codec of %v", obj, c.typ)
	}
	if c.kind == cborKind {
		return encodeCBOR(dst, obj.(*unstructured.Unstructured))
	}
	return encodeProto(dst, obj)
}

// Decode returns a new object of c's type decoded from b. The object
// shares no memory with b: b may be reused once Decode returns.
func (c *Codec) Decode(b []byte) (any, error) {
	if c.kind == cborKind {
		return decodeCBOR(b)
	}
	return c.decodeProto(b)
}

// encodeProto writes apiVersion and kind, each a length and its bytes,
// then the protobuf encoding.
func encodeProto(dst []byte, obj any) ([]byte, error) {
	ta, err := meta.TypeAccessor(obj)
	if err != nil {
		return dst, fmt.Errorf("compact: %w", err)
	}
	dst = appendString(dst, ta.GetAPIVersion())
	dst = appendString(dst, ta.GetKind())
	p := obj.(protoObject)
	n := p.Size()
	start := len(dst)
	dst = append(dst, make([]byte, n)...)
	if _, err := p.MarshalToSizedBuffer(dst[start:]); err != nil {
		return dst[:start], fmt.Errorf("compact: marshalling %T: %w", obj, err)
	}
	return dst, nil
}

func (c *Codec) decodeProto(b []byte) (any, error) {
	apiVersion, b, ok1 := readString(b)
	kind, b, ok2 := readString(b)
	if !ok1 || !ok2 {
		return nil, ErrCorrupt
	}
	obj := reflect.New(c.typ.Elem()).Interface()
	if err := obj.(protoObject).Unmarshal(b); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	ta, err := meta.TypeAccessor(obj)
	if err != nil {
		return nil, fmt.Errorf("compact: %w", err)
	}
	ta.SetAPIVersion(apiVersion)
	ta.SetKind(kind)
	return obj, nil
}

func encodeCBOR(dst []byte, u *unstructured.Unstructured) ([]byte, error) {
	b, err := direct.Marshal(u.Object)
	if err != nil {
		return dst, fmt.Errorf("compact: encoding an unstructured object: %w", err)
	}
	return append(dst, b...), nil
}

func decodeCBOR(b []byte) (any, error) {
	var m map[string]any
	if err := direct.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// readString reads what appendString wrote and returns the rest of b.
func readString(b []byte) (string, []byte, bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < n {
		return "", nil, false
	}
	return string(b[k : k+int(n)]), b[k+int(n):], true
}
