package lean

import (
	"hash/maphash"
	"maps"
	"math"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Sharing equal maps across objects (the root's ReflectorOptions.ShareMaps).
//
// A decoded map costs far more than its entries: a Go map of up to eight
// entries is a header and a group of eight slots, so a Pod's six labels
// take about 300 bytes before their strings, and each of its containers'
// resource lists (map[ResourceName]Quantity, 72 bytes a slot) about 650.
// Objects made from one template (a ReplicaSet's Pods) hold equal maps:
// the table keeps one of them per content and the others are replaced by
// it, whole. Only maps whose keys are strings and whose values are strings
// or resource.Quantity are shared: their content is plain values, so
// equality is decided by value (strings byte for byte, quantities by
// format and Cmp).

// quantityType is resource.Quantity's type, the one non-string map value
// that maps are shared with.
var quantityType = reflect.TypeFor[resource.Quantity]()

// shareableMap says whether maps of type t are shared under ShareMaps.
func shareableMap(t reflect.Type) bool {
	return t.Kind() == reflect.Map && t.Key().Kind() == reflect.String &&
		(t.Elem().Kind() == reflect.String || t.Elem() == quantityType)
}

// mapID names a map's content in the table: its type and a hash of its
// entries. Two maps with one ID are compared before one stands for the
// other, so a collision only costs a missed share.
type mapID struct {
	typ reflect.Type
	sum uint64
}

// entryHash mixes the hashes of one entry's key and value; entries are
// combined by addition, so a map's hash does not depend on its order.
func entryHash(k, v uint64) uint64 { return (k ^ 0x9e3779b97f4a7c15) * (v | 1) }

// canonStringMap returns the map the table holds with m's content, or m
// itself, which the table then holds, when it has none.
func (t *stripe) canonStringMap(m map[string]string) map[string]string {
	hash := func(v string) uint64 { return maphash.String(t.seed, v) }
	return canonTyped(t, stringMapType, m, hash, func(a, b string) bool { return a == b })
}

// canonResourceList is canonStringMap for a resource list.
func (t *stripe) canonResourceList(m corev1.ResourceList) corev1.ResourceList {
	return canonTyped(t, resourceListType, m, t.quantityHash, equalQuantities)
}

// canonTyped is canonStringMap for m, a map of the Go type typ with
// string keys, whose values hash by hash and compare by equal (values
// that are equal hash alike).
func canonTyped[M ~map[K]V, K ~string, V any](t *stripe, typ reflect.Type, m M, hash func(V) uint64, equal func(V, V) bool) M {
	var sum uint64
	for k, v := range m {
		sum += entryHash(maphash.String(t.seed, string(k)), hash(v))
	}
	id := mapID{typ: typ, sum: sum + uint64(len(m))}
	c := t.canonMapBy(id, m, func(held any) bool {
		h, ok := held.(M)
		return ok && maps.EqualFunc(h, m, equal)
	})
	return c.(M)
}

// canonMap is canonStringMap for m, a map of a type shareableMap allows,
// through reflection.
func (t *stripe) canonMap(m reflect.Value) reflect.Value {
	quantities := m.Type().Elem() == quantityType
	var sum uint64
	it := m.MapRange()
	for it.Next() {
		sum += entryHash(maphash.String(t.seed, it.Key().String()), t.valueHash(it.Value(), quantities))
	}
	id := mapID{typ: m.Type(), sum: sum + uint64(m.Len())}
	c := t.canonMapBy(id, m.Interface(), func(held any) bool {
		return equalMaps(reflect.ValueOf(held), m, quantities)
	})
	return reflect.ValueOf(c)
}

// valueHash hashes a map value: a string's bytes, or a quantity's format
// and numeric value (equal quantities hash alike, see equalMapValues).
func (t *stripe) valueHash(v reflect.Value, quantity bool) uint64 {
	if !quantity {
		return maphash.String(t.seed, v.String())
	}
	return t.quantityHash(v.Interface().(resource.Quantity))
}

// quantityHash hashes a quantity's format and value.
func (t *stripe) quantityHash(q resource.Quantity) uint64 {
	return maphash.String(t.seed, string(q.Format)) ^ math.Float64bits(q.AsApproximateFloat64())
}

// equalQuantities: of one format and equal in value.
func equalQuantities(a, b resource.Quantity) bool { return a.Format == b.Format && a.Cmp(b) == 0 }

// equalMaps says whether a and b, maps of one shareable type, hold the
// same keys with equal values.
func equalMaps(a, b reflect.Value, quantities bool) bool {
	if a.Len() != b.Len() {
		return false
	}
	it := b.MapRange()
	for it.Next() {
		av := a.MapIndex(it.Key())
		if !av.IsValid() || !equalMapValues(av, it.Value(), quantities) {
			return false
		}
	}
	return true
}

// equalMapValues: strings equal byte for byte; quantities of one format
// and equal value (which encode to the same canonical string).
func equalMapValues(a, b reflect.Value, quantity bool) bool {
	if !quantity {
		return a.String() == b.String()
	}
	return equalQuantities(a.Interface().(resource.Quantity), b.Interface().(resource.Quantity))
}

// canonMapBy returns the map held under id if equal says it has m's
// content (moving it to the current generation), otherwise m, which
// becomes the held one unless another map holds id in this generation.
func (t *stripe) canonMapBy(id mapID, m any, equal func(held any) bool) any {
	if c, ok := t.curMaps[id]; ok {
		if equal(c) {
			return c
		}
		return m
	}
	if c, ok := t.prevMaps[id]; ok && equal(c) {
		t.curMaps[id] = c
		return c
	}
	t.curMaps[id] = m
	return m
}
