package lean

import (
	"maps"
	"reflect"
	"unsafe"

	"github.com/kreflector/cache/internal/repr"
)

// Adopting a changed object's unchanged values from its held version
// (part of the root's ReflectorOptions.ReuseHeldObjects).
//
// When a relist lists an object at another resourceVersion than the one
// the store holds under its key, most of its values are still what the
// held version has: a Pod whose status moved keeps its spec, images,
// labels and managedFields. Until the store's Replace, both versions are
// alive, each with its own copy of those values. Adopt points the
// listed object's strings and byte slices at the held version's equal
// ones, so the listed copy's own become garbage with its page, and the
// values the two versions share are held once from then on.
//
// Adopted are strings, reached through struct fields, pointers, slices
// and arrays, and, with mutable set, byte slices and whole
// map[string]string values (labels, annotations, a ConfigMap's data)
// equal to the held version's. A string's bytes never change; a byte
// slice or map adopted is shared by the two versions, which is safe since
// neither may be written to once stored, but not before the store's own
// transform, which could change the new version's in place under the
// old one's readers: so mutable is unset for a store that transforms.
// No map is written into and no interface entered, since the listed
// object's maps may be its page's, read by others; so unstructured
// objects, whose content is all maps, adopt nothing.

// Adopt replaces, in obj, each non-empty string (and with mutable,
// each byte slice and map[string]string) equal to the one at the same
// place in held by held's, when both are pointers to the same Go type.
// Slices are paired by index. obj's fields must not be read by anyone
// else meanwhile; held is only read. Values keep their bytes.
func Adopt(obj, held interface{}, mutable bool) {
	ov, hv := reflect.ValueOf(obj), reflect.ValueOf(held)
	if !ov.IsValid() || !hv.IsValid() || ov.Type() != hv.Type() || ov.Kind() != reflect.Pointer {
		return
	}
	o, h := ov.UnsafePointer(), hv.UnsafePointer()
	if o == nil || h == nil || o == h {
		return
	}
	a := adopter{left: maxShareVisits, mutable: mutable}
	a.walk(heldPlans.of(ov.Type().Elem()), o, h, 0)
}

// adopter is one object's adoption walk: what is left of its visits
// (see maxShareVisits and maxShareDepth), and whether it adopts byte
// slices and maps.
type adopter struct {
	left    int
	mutable bool
}

// walk adopts what p describes in the value at obj from the one at held.
func (a *adopter) walk(p *plan, obj, held unsafe.Pointer, depth int) {
	a.left--
	if a.left < 0 || depth > maxShareDepth {
		return
	}
	for i := range p.steps {
		s := &p.steps[i]
		a.step(s, unsafe.Add(obj, s.off), unsafe.Add(held, s.off), depth)
	}
}

// step adopts what s describes at obj from held; other maps and
// interfaces are left as they are.
func (a *adopter) step(s *walkStep, obj, held unsafe.Pointer, depth int) {
	switch s.kind {
	case walkString:
		adoptString((*string)(obj), (*string)(held))
	case walkBytes:
		if a.mutable {
			adoptBytes((*[]byte)(obj), (*[]byte)(held))
		}
	case walkPointer:
		o, h := *(*unsafe.Pointer)(obj), *(*unsafe.Pointer)(held)
		if o != nil && h != nil && o != h {
			a.walk(s.elem, o, h, depth+1)
		}
	case walkSlice:
		o, on := repr.SliceAt(obj)
		h, hn := repr.SliceAt(held)
		if o == h {
			return
		}
		for i := range uintptr(min(on, hn)) {
			a.walk(s.elem, unsafe.Add(o, i*s.size), unsafe.Add(h, i*s.size), depth+1)
		}
	case walkArray:
		for i := range s.n {
			a.walk(s.elem, unsafe.Add(obj, i*s.size), unsafe.Add(held, i*s.size), depth+1)
		}
	case walkStringMap:
		if a.mutable {
			adoptStringMap((*map[string]string)(obj), (*map[string]string)(held))
		}
	}
}

// adoptStringMap sets *obj to *held if they hold the same entries and are
// not empty.
func adoptStringMap(obj, held *map[string]string) {
	o, h := *obj, *held
	if len(o) != 0 && len(o) == len(h) && !repr.SameMap(o, h) && maps.Equal(o, h) {
		*obj = h
	}
}

// adoptString sets *obj to *held if they are equal, non-empty and not
// already one copy.
func adoptString(obj, held *string) {
	o, h := *obj, *held
	if len(o) == 0 || len(o) != len(h) || unsafe.StringData(o) == unsafe.StringData(h) {
		return
	}
	if o == h {
		*obj = h
	}
}

// adoptBytes is adoptString for byte slices: *obj becomes *held (length
// and capacity too) if their bytes are equal.
func adoptBytes(obj, held *[]byte) {
	o, h := *obj, *held
	if len(o) == 0 || len(o) != len(h) || unsafe.SliceData(o) == unsafe.SliceData(h) {
		return
	}
	if string(o) == string(h) {
		*obj = h
	}
}
