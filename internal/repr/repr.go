// Package repr is the one place that reads Go's runtime representation of
// values: the two words of an interface, the pointer word of a map, the
// header of a slice, and a struct's unexported field (at the offset
// reflect reports, for a dependency's client that keeps what this module
// needs to itself). Everything else works through the language, the
// reflect package, or pointers and offsets reflect reports.
//
// What it reads is stable across the Go releases this module supports: an
// interface is a type (or itab) word followed by a data word, in which a
// pointer is stored as itself and any other value behind a non-nil
// pointer; a map value is one pointer; a slice is a data pointer, a length
// and a capacity. The tests pin each read against reflect's answer.
package repr

import (
	"reflect"
	"unsafe"
)

// words is the layout of an interface value, empty or not.
type words [2]unsafe.Pointer

// Same says whether a and b hold the same value: the same dynamic type
// and the same data word (for a pointer, the same pointer; for anything
// else, the same boxed copy). Unlike ==, it never panics on uncomparable
// types, and it reads no more than the two words.
func Same(a, b any) bool {
	return *(*words)(unsafe.Pointer(&a)) == *(*words)(unsafe.Pointer(&b))
}

// IsNil says whether v is nil or holds a nil pointer. It reads the data
// word rather than going through reflect, for paths that run per event.
func IsNil(v any) bool {
	return v == nil || (*words)(unsafe.Pointer(&v))[1] == nil
}

// SameMap says whether a and b are one map (not merely equal ones).
func SameMap[M ~map[K]V, K comparable, V any](a, b M) bool {
	return *(*unsafe.Pointer)(unsafe.Pointer(&a)) == *(*unsafe.Pointer)(unsafe.Pointer(&b))
}

// sliceHeader is the layout of a slice value of any element type.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// SliceAt returns the data pointer and length of the slice, of any
// element type, stored at p.
func SliceAt(p unsafe.Pointer) (data unsafe.Pointer, n int) {
	h := (*sliceHeader)(p)
	return h.data, h.len
}

// Field returns the value of the field name, exported or not, of the
// struct p points to, if p is a non-nil pointer to a struct that has a
// field of that name whose type is exactly T; ok is false otherwise. It
// reads the field at the offset reflect reports, so a field that changes
// name or type in a dependency's next release is simply not found.
func Field[T any](p any, name string) (v T, ok bool) {
	rv := reflect.ValueOf(p)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return v, false
	}
	f := rv.Elem().FieldByName(name)
	if !f.IsValid() || f.Type() != reflect.TypeFor[T]() {
		return v, false
	}
	return *(*T)(unsafe.Pointer(f.UnsafeAddr())), true
}
