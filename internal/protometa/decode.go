// Package protometa decodes the protobuf bytes of a Kubernetes object
// without its metadata.managedFields, for a caller that drops them anyway
// (a Reflector's DropManagedFields): they are about a sixth of a realistic
// Pod's decoding time and of what it allocates, all of it garbage at once.
//
// It applies to the types whose protobuf field 1 is an embedded
// metav1.ObjectMeta, as it is for every object type of k8s.io/api and for
// PartialObjectMetadata. Their generated Unmarshal methods read fields in
// order and merge each into the value (a message field into the field's
// value, a repeated one appended), so decoding the bytes around the
// managedFields entries, in order, gives what decoding all of them gives,
// but for ManagedFields. Bytes whose fields cannot be told apart, or
// whose entries the generated code would refuse, are decoded by it whole;
// any other failure is met by it at the same field as a whole decode
// meets it: either way the error is its own.
//
// Only types of Kubernetes' own API packages are decoded so (see For):
// another type's Unmarshal might reset the value or post-process it.
package protometa

import (
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// unmarshaler is what the generated types have.
type unmarshaler interface{ Unmarshal([]byte) error }

// metaField is ObjectMeta's protobuf field in the types decoded here, and
// managedFields is its field of the entries.
const (
	metaField     = 1
	managedFields = 17
)

// Decoder decodes the protobuf bytes of objects of one type with their
// managedFields left out. It is safe for concurrent use.
type Decoder struct {
	// meta is the index of the embedded ObjectMeta in the type.
	meta int
}

var objectMetaType = reflect.TypeOf(metav1.ObjectMeta{})

// For returns the Decoder of t, a struct type, or nil if t is not of one
// of Kubernetes' own API packages (k8s.io/api/…, k8s.io/apimachinery's
// pkg/apis/…, whose Unmarshal methods are generated), has no Unmarshal,
// or its protobuf field 1 is not an embedded metav1.ObjectMeta.
func For(t reflect.Type) *Decoder {
	if t.Kind() != reflect.Struct || !generatedPackage(t.PkgPath()) ||
		!reflect.PointerTo(t).Implements(reflect.TypeOf((*unmarshaler)(nil)).Elem()) {
		return nil
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type == objectMetaType && strings.HasPrefix(f.Tag.Get("protobuf"), "bytes,1,") {
			return &Decoder{meta: i}
		}
	}
	return nil
}

// generatedPackage says whether pkg is one of Kubernetes' own API
// packages.
func generatedPackage(pkg string) bool {
	return strings.HasPrefix(pkg, "k8s.io/api/") || strings.HasPrefix(pkg, "k8s.io/apimachinery/pkg/apis/")
}

// Unmarshal decodes data into dst, an addressable value of the Decoder's
// type, as its Unmarshal method would, except that no managedFields entry
// is decoded: dst.ManagedFields is left as it was. On bytes that method
// would refuse the error is its own; dst is then partly decoded (with its
// managedFields when the bytes were given to it whole).
func (d *Decoder) Unmarshal(data []byte, dst reflect.Value) error {
	obj := dst.Addr().Interface().(unmarshaler)
	if !leftOut(data) {
		return obj.Unmarshal(data)
	}
	meta := dst.Field(d.meta).Addr().Interface().(*metav1.ObjectMeta)
	run := 0
	for i := 0; i < len(data); {
		f, _ := next(data, i)
		i = f.end
		if f.num != metaField || f.wire != wireBytes {
			continue
		}
		if err := unmarshalRange(obj, data, run, f.start); err != nil {
			return err
		}
		if err := unmarshalAround(meta, f.body); err != nil {
			return err
		}
		run = f.end
	}
	return unmarshalRange(obj, data, run, len(data))
}

// leftOut says whether data, read as the generated code would read it,
// has managedFields entries to leave out, all of them valid.
func leftOut(data []byte) bool {
	found := false
	for i := 0; i < len(data); {
		f, ok := next(data, i)
		if !ok {
			return false
		}
		if f.num == metaField && f.wire == wireBytes {
			has, ok := entries(f.body)
			if !ok {
				return false
			}
			found = found || has
		}
		i = f.end
	}
	return found
}

// entries says whether an ObjectMeta's bytes have managedFields entries,
// and whether those and the structure around them are valid.
func entries(meta []byte) (has, ok bool) {
	for i := 0; i < len(meta); {
		f, ok := next(meta, i)
		if !ok {
			return false, false
		}
		if f.num == managedFields {
			if f.wire != wireBytes || !valid(f.body, managedFieldsEntry) {
				return false, false
			}
			has = true
		}
		i = f.end
	}
	return has, true
}

// unmarshalAround decodes an ObjectMeta's bytes into meta but for its
// managedFields entries.
func unmarshalAround(meta *metav1.ObjectMeta, data []byte) error {
	run := 0
	for i := 0; i < len(data); {
		f, _ := next(data, i)
		i = f.end
		if f.num != managedFields {
			continue
		}
		if err := unmarshalRange(meta, data, run, f.start); err != nil {
			return err
		}
		run = f.end
	}
	return unmarshalRange(meta, data, run, len(data))
}

// unmarshalRange decodes data[from:to] into m, if it is not empty.
func unmarshalRange(m unmarshaler, data []byte, from, to int) error {
	if from == to {
		return nil
	}
	return m.Unmarshal(data[from:to])
}
