// Package jsonmeta reads an object's identity (apiVersion, kind,
// namespace, name, resourceVersion) from its JSON bytes without decoding
// it, exactly as client-go's decoders would set it, or refuses to: for a
// caller that skips decoding the objects it already holds (the LIST items
// and WatchList initial events of a relist). Its protobuf counterpart is
// internal/protometa.
package jsonmeta

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Meta is an object's identity as its JSON holds it. The slices alias the
// bytes read.
type Meta struct {
	APIVersion, Kind                 []byte
	Namespace, Name, ResourceVersion []byte
	metadatas                        int  // how many "metadata" members the object has
	items                            bool // a top-level key is "items", in any case
}

// Read reads the identity of data, the JSON of one object: apiVersion and
// kind from its top-level members, namespace, name and resourceVersion
// from its "metadata", as the decoders set them. Keys match exactly and a
// later value of a key wins, as in utiljson.Unmarshal (the typed and
// unstructured decoders) and in encoding/json where it finds apiVersion
// and kind (the serializer's Interpret) for exact keys. Where several
// "metadata" members are present the values read are the last of each
// across all of them, as a typed decoder merges them (a map keeps only
// the last: see Meta.Map).
//
// ok is false, and the object is to be decoded, wherever what is read here
// could differ from what a decoder sets: a key escaped, or differing from
// one of the five keys or "metadata" only in case (encoding/json would
// take it as the key); one of the five whose value is not a plain string
// (null, escapes, control characters, bytes that are not UTF-8); a
// "metadata" that is not an object; JSON that does not parse as far as it
// is read, or has more than whitespace after the object. Values of other
// keys are only skipped: bytes a decoder would refuse there are not
// noticed here.
func Read(data []byte) (m Meta, ok bool) {
	s := scanner{b: data}
	ok = s.members(func(key []byte) bool {
		switch {
		case string(key) == "apiVersion":
			return s.plain(&m.APIVersion)
		case string(key) == "kind":
			return s.plain(&m.Kind)
		case string(key) == "metadata":
			m.metadatas++
			return s.members(func(key []byte) bool {
				switch {
				case string(key) == "name":
					return s.plain(&m.Name)
				case string(key) == "namespace":
					return s.plain(&m.Namespace)
				case string(key) == "resourceVersion":
					return s.plain(&m.ResourceVersion)
				case foldsTo(key, "name", "namespace", "resourceVersion"):
					return false
				}
				return s.skip()
			})
		case foldsTo(key, "metadata", "apiVersion", "kind"):
			return false
		case foldsTo(key, "items"):
			m.items = true
		}
		return s.skip()
	})
	if s.space(); !ok || s.i != len(data) {
		return Meta{}, false
	}
	return m, true
}

// Map says whether m is also what decoding into a map (an unstructured
// object) sets: a map keeps the last "metadata" whole, where a typed
// decoder merges them, so an object with two or more is refused; and an
// object with "items" is refused, which unstructured decoders that
// choose the type from the bytes (UnstructuredJSONScheme without a
// target) make an UnstructuredList.
func (m Meta) Map() bool { return m.metadatas <= 1 && !m.items }

// Identity is Read's namespace, name and resourceVersion, for an object
// decoded into a typed object whose metav1.ObjectMeta is its "metadata".
func Identity(data []byte) (namespace, name, resourceVersion []byte, ok bool) {
	m, ok := Read(data)
	if !ok {
		return nil, nil, nil, false
	}
	return m.Namespace, m.Name, m.ResourceVersion, true
}

// MapIdentity is Identity for an object decoded into a map (an
// unstructured object): an object with two "metadata" is refused.
func MapIdentity(data []byte) (namespace, name, resourceVersion []byte, ok bool) {
	m, ok := Read(data)
	if !ok || !m.Map() {
		return nil, nil, nil, false
	}
	return m.Namespace, m.Name, m.ResourceVersion, true
}

// foldsTo says whether key equals one of names when case is ignored.
func foldsTo(key []byte, names ...string) bool {
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return true
		}
	}
	return false
}

// MetaType says whether t, a struct type, holds its identity where
// Identity reads it: a metav1.ObjectMeta field whose JSON name is
// "metadata", and no UnmarshalJSON of its own that could put it
// elsewhere.
func MetaType(t reflect.Type) bool {
	unmarshaler := reflect.TypeFor[json.Unmarshaler]()
	if t.Kind() != reflect.Struct || t.Implements(unmarshaler) || reflect.PointerTo(t).Implements(unmarshaler) {
		return false
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Type == reflect.TypeFor[metav1.ObjectMeta]() && name == "metadata" {
			return true
		}
	}
	return false
}
