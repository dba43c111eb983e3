package lean

import (
	"reflect"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kreflector/cache/internal/repr"
)

// Sharing equal strings across objects (the root's
// ReflectorOptions.ShareStrings).
//
// Many strings of the objects of one resource are equal from object to
// object: label keys and values, image names, node names, namespaces,
// owner references, managedFields' field sets. Decoded, each object has
// its own copy of each. shareObjectIn replaces each with a canonical copy
// from the Reflector's Table, so equal values are held once.
//
// Why a table of our own rather than the standard library's unique
// package: unique holds its entries only until the first garbage
// collection after the last Handle is dropped, and the objects keep the
// canonical bytes, not Handles; so sharing spanned only the objects met
// between two collections, which made how much was shared depend on the
// collector's pace (least when the heap is small or GOGC low). Its lookup
// (a concurrent trie and a weak pointer) also cost about 100 ns a value,
// 14 µs for a decoded Pod; a plain map behind one lock per object costs a
// fraction of that. The table's bound is its generations (see
// Table).

// maxShareDepth bounds the nesting sharing follows (pointers, slices,
// maps), and maxShareVisits the values it visits in one object, against
// values that refer to themselves (a decoded object never does, and is far
// smaller and shallower).
const (
	maxShareDepth  = 100
	maxShareVisits = 1 << 20
)

// walker is one object's walk: the table it shares through, and what is
// left of its visits.
type walker struct {
	t    *stripe
	left int
}

// visit counts a visit at depth; false once the walk must stop.
func (w *walker) visit(depth int) bool {
	w.left--
	return w.left >= 0 && depth <= maxShareDepth
}

// shareObjectIn replaces, in place, every non-empty string and byte slice
// reachable from obj through exported fields, pointers, slices, arrays,
// maps (keys too) and interfaces, and every string, map key and number of
// unstructured content, with its canonical copy in t (whose lock the
// caller holds). Every value keeps its bytes. obj must not be read by
// anyone else meanwhile. Byte slices
// become shared read-only memory: writing into one would change every
// object holding it (cached objects must never be written to anyway).
func shareObjectIn(t *stripe, obj interface{}) {
	switch o := obj.(type) {
	case nil:
		return
	case *unstructured.Unstructured:
		// Unstructured content shares strings only; its maps are not
		// shared whole.
		if o != nil && t.strings {
			(&walker{t: t, left: maxShareVisits}).unstructured(o.Object)
		}
		return
	}
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return
	}
	w := &walker{t: t, left: maxShareVisits}
	w.walk(planFor(v.Type().Elem()), v.UnsafePointer(), 0)
}

// share returns the canonical copy of s.
func (w *walker) share(s string) string {
	if s == "" || !w.t.strings {
		return s
	}
	return w.t.canon(s)
}

// walk shares what p describes in the value at base.
func (w *walker) walk(p *plan, base unsafe.Pointer, depth int) {
	if !w.visit(depth) {
		return
	}
	for i := range p.steps {
		w.apply(&p.steps[i], unsafe.Add(base, p.steps[i].off), depth)
	}
}

// apply shares what s describes in the value at at.
func (w *walker) apply(s *walkStep, at unsafe.Pointer, depth int) {
	switch s.kind {
	case walkString:
		w.stringAt((*string)(at))
	case walkBytes:
		w.bytesAt((*[]byte)(at))
	case walkPointer:
		if q := *(*unsafe.Pointer)(at); q != nil {
			w.walk(s.elem, q, depth+1)
		}
	case walkSlice:
		data, n := repr.SliceAt(at)
		for i := range uintptr(n) {
			w.walk(s.elem, unsafe.Add(data, i*s.size), depth+1)
		}
	case walkArray:
		for i := range s.n {
			w.walk(s.elem, unsafe.Add(at, i*s.size), depth+1)
		}
	case walkStringMap:
		w.stringMapAt((*map[string]string)(at))
	case walkJSONMap:
		w.jsonFields(*(*map[string]interface{})(at), depth+1, nil)
	case walkResourceList:
		w.resourceListAt((*corev1.ResourceList)(at))
	case walkMap:
		w.mapAt(s, reflect.NewAt(s.typ, at).Elem(), depth+1)
	case walkInterface:
		w.iface(reflect.NewAt(s.typ, at).Elem(), depth+1)
	}
}

// stringAt replaces *p by its canonical copy, writing only if the copy
// is another one.
func (w *walker) stringAt(p *string) {
	s := *p
	if s == "" || !w.t.strings {
		return
	}
	if c := w.t.canon(s); unsafe.StringData(c) != unsafe.StringData(s) {
		*p = c
	}
}

// bytesAt replaces *p by a slice of the canonical copy of its bytes
// (length and capacity equal), writing only if that is another copy. An
// empty or nil slice is left as it is.
func (w *walker) bytesAt(p *[]byte) {
	b := *p
	if len(b) == 0 || !w.t.strings {
		return
	}
	// The lookup reads b's bytes in place; the table copies them if they
	// become the canonical value.
	c := w.t.canon(unsafe.String(unsafe.SliceData(b), len(b)))
	if unsafe.StringData(c) != unsafe.SliceData(b) {
		*p = unsafe.Slice(unsafe.StringData(c), len(c))
	}
}

// stringMapAt replaces the map at p by an equal one the table holds
// (under ShareMaps), or else shares its keys and values. A map the table
// did not hold is held from now on, its strings shared in place.
func (w *walker) stringMapAt(p *map[string]string) {
	m := *p
	if len(m) == 0 {
		return
	}
	if w.t.maps {
		if c := w.t.canonStringMap(m); !repr.SameMap(c, m) {
			*p = c
			return
		}
	}
	w.stringMap(m)
}

// resourceListAt is stringMapAt for a resource list: names shared as
// keys, quantities' formats as values.
func (w *walker) resourceListAt(p *corev1.ResourceList) {
	m := *p
	if len(m) == 0 {
		return
	}
	if w.t.maps {
		if c := w.t.canonResourceList(m); !repr.SameMap(c, m) {
			*p = c
			return
		}
	}
	if !w.t.strings {
		return
	}
	for k, q := range m {
		ck, cf := w.share(string(k)), w.share(string(q.Format))
		if unsafe.StringData(ck) != unsafe.StringData(string(k)) || unsafe.StringData(cf) != unsafe.StringData(string(q.Format)) {
			q.Format = resource.Format(cf)
			m[corev1.ResourceName(ck)] = q
		}
	}
}

// mapAt is stringMapAt for m, a settable map of another type, through
// reflection (see mapValues).
func (w *walker) mapAt(s *walkStep, m reflect.Value, depth int) {
	if s.shareable && w.t.maps && m.Len() > 0 {
		if c := w.t.canonMap(m); c.UnsafePointer() != m.UnsafePointer() {
			m.Set(c)
			return
		}
	}
	w.mapValues(m, s.elem, depth)
}

// stringMap shares m's keys and values. Assigning to an existing key
// stores the key given, so the canonical key replaces the decoded one.
func (w *walker) stringMap(m map[string]string) {
	if !w.t.strings {
		return
	}
	for k, v := range m {
		ck, cv := w.share(k), w.share(v)
		if unsafe.StringData(ck) != unsafe.StringData(k) || unsafe.StringData(cv) != unsafe.StringData(v) {
			m[ck] = cv
		}
	}
}

// mapValues shares the keys of m, a map with string keys (of any named
// type), and, if elem is set, what its values hold.
func (w *walker) mapValues(m reflect.Value, elem *plan, depth int) {
	if m.IsNil() || !w.visit(depth) {
		return
	}
	t := m.Type()
	stringKeys := t.Key().Kind() == reflect.String && w.t.strings
	if !stringKeys && elem == nil {
		return
	}
	it := m.MapRange()
	for it.Next() {
		k, v := it.Key(), it.Value()
		if stringKeys {
			k = w.sharedStringValue(k)
		}
		if elem != nil {
			v = w.mapValue(v, elem, depth)
		}
		m.SetMapIndex(k, v)
	}
}

// sharedStringValue is a new value of v's type (of kind string) holding
// the canonical copy of v's string.
func (w *walker) sharedStringValue(v reflect.Value) reflect.Value {
	c := reflect.New(v.Type()).Elem()
	c.SetString(w.share(v.String()))
	return c
}

// mapValue is v, a map's value (not addressable), with what elem
// describes in it shared: a pointer's target in place, anything else on
// an addressable copy.
func (w *walker) mapValue(v reflect.Value, elem *plan, depth int) reflect.Value {
	switch v.Kind() {
	case reflect.String:
		return w.sharedStringValue(v)
	case reflect.Pointer:
		if !v.IsNil() {
			w.walk(elem, v.UnsafePointer(), depth)
		}
		return v
	}
	c := reflect.New(v.Type()).Elem()
	c.Set(v)
	w.walk(elem, c.Addr().UnsafePointer(), depth)
	return c
}

// iface shares what v, a settable interface value, holds: a pointer's
// target in place, JSON content in place, a string or number (in an
// empty interface) by the canonical boxed value.
func (w *walker) iface(v reflect.Value, depth int) {
	if v.IsNil() {
		return
	}
	e := v.Elem()
	switch e.Kind() {
	case reflect.Pointer:
		if !e.IsNil() {
			w.walk(planFor(e.Type().Elem()), e.UnsafePointer(), depth)
		}
		return
	}
	if v.NumMethod() != 0 || !w.t.strings {
		return
	}
	if c := w.json(e.Interface(), depth); !repr.Same(c, e.Interface()) {
		v.Set(reflect.ValueOf(&c).Elem())
	}
}

// unstructured shares an unstructured object's content, leaving out the
// values of its own name, uid and resourceVersion (see ownField).
func (w *walker) unstructured(obj map[string]interface{}) {
	for k, v := range obj {
		ck, cv := w.share(k), v
		if md, ok := v.(map[string]interface{}); ok && k == "metadata" {
			w.jsonFields(md, 1, ownMetadataField)
		} else {
			cv = w.json(v, 1)
		}
		if unsafe.StringData(ck) != unsafe.StringData(k) || !repr.Same(cv, v) {
			obj[ck] = cv
		}
	}
}

// jsonFields shares the keys of m, unstructured content, and the values
// of those that skip (if set) does not name.
func (w *walker) jsonFields(m map[string]interface{}, depth int, skip func(string) bool) {
	if !w.visit(depth) {
		return
	}
	for k, v := range m {
		ck, cv := w.share(k), v
		if skip == nil || !skip(k) {
			cv = w.json(v, depth+1)
		}
		if unsafe.StringData(ck) != unsafe.StringData(k) || !repr.Same(cv, v) {
			m[ck] = cv
		}
	}
}

// json returns v, a value of unstructured content, shared: the canonical
// boxed value for a non-empty string or a number (so the box is shared
// too), v itself for maps and slices (shared in place) and the rest.
func (w *walker) json(v interface{}, depth int) interface{} {
	switch x := v.(type) {
	case string:
		if x == "" {
			return v
		}
		return w.t.box(v)
	case int64, float64:
		return w.t.box(v)
	case map[string]interface{}:
		w.jsonFields(x, depth, nil)
	case []interface{}:
		if !w.visit(depth) {
			return v
		}
		for i, e := range x {
			if c := w.json(e, depth+1); !repr.Same(c, e) {
				x[i] = c
			}
		}
	}
	return v
}
