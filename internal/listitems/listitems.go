// Package listitems takes the items out of a list as the Reflector
// stores them: each in an allocation of its own, as
// meta.EachListItemWithAlloc does, so that an object the cache keeps
// does not keep its whole list alive; for a large list of typed items,
// on several goroutines at once.
package listitems

import (
	"bytes"
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// parallelFrom is the fewest items copied on several goroutines: below
// it, starting them costs more than the copy.
const parallelFrom = 4096

var objectType = reflect.TypeFor[runtime.Object]()

// AppendWithAlloc appends to dst the items of list, in order, each
// copied into a new allocation: exactly what meta.EachListItemWithAlloc
// hands its function, with its errors. A list of at least parallelFrom
// items whose Items is a slice of structs (a clientset's list) is copied
// on up to workers goroutines, each a range of it; every other list (an
// unstructured one, items of pointers, interfaces or RawExtensions) goes
// through EachListItemWithAlloc. It returns once every copy is made.
func AppendWithAlloc(dst []interface{}, list runtime.Object, workers int) ([]interface{}, error) {
	items, ok := structItems(list)
	if !ok || workers <= 1 || items.Len() < parallelFrom {
		err := meta.EachListItemWithAlloc(list, func(o runtime.Object) error {
			dst = append(dst, o)
			return nil
		})
		return dst, err
	}
	n, from := items.Len(), len(dst)
	dst = append(dst, make([]interface{}, n)...)
	out := dst[from:]
	spread(n, workers, func(i int) { out[i] = copyOut(items, i) })
	return dst, nil
}

// copyOut is element i of items in an allocation of its own.
func copyOut(items reflect.Value, i int) runtime.Object {
	c := reflect.New(items.Type().Elem())
	c.Elem().Set(items.Index(i))
	return c.Interface().(runtime.Object)
}

// spread calls f for each of 0..n-1: on up to workers goroutines, each a
// range, when n is at least parallelFrom; else on the calling one. It
// returns once every call has.
func spread(n, workers int, f func(i int)) {
	if workers <= 1 || n < parallelFrom {
		for i := range n {
			f(i)
		}
		return
	}
	per := (n + workers - 1) / workers
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += per {
		hi := min(lo+per, n)
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				f(i)
			}
		})
	}
	wg.Wait()
}

// AppendOwned is AppendWithAlloc for a list whose items were decoded
// into allocations of their own, owned (in order), and copied into Items
// from there (see listhint's Owned): each owned item whose element of
// Items is still, byte for byte, the struct copied from it is appended
// as it is, being exactly the copy AppendWithAlloc would make; an item
// changed in Items since is copied out of Items. held, if not nil, has
// one element per item: where it is not nil, the item was not decoded
// (its owned element is nil) and that is appended in its place. With
// owned nil, or not one pointer per element of a slice of structs (but
// where held stands in), it is AppendWithAlloc, unless held has stand-ins:
// then an error, as such a list cannot be read otherwise. An unstructured
// list with held is taken item by item (see appendUnstructuredHeld).
func AppendOwned(dst []interface{}, list runtime.Object, owned []runtime.Object, held []any, workers int) ([]interface{}, error) {
	if u, ok := list.(*unstructured.UnstructuredList); ok && held != nil {
		return appendUnstructuredHeld(dst, u, held)
	}
	if !ownedFits(list, owned, held) {
		if held != nil {
			return dst, fmt.Errorf("listitems: %T with items not decoded does not match them", list)
		}
		return AppendWithAlloc(dst, list, workers)
	}
	items, _ := structItems(list)
	n, from := items.Len(), len(dst)
	dst = append(dst, make([]interface{}, n)...)
	out := dst[from:]
	spread(n, workers, func(i int) {
		if held != nil && held[i] != nil {
			out[i] = held[i]
		} else if sameStruct(items.Index(i), reflect.ValueOf(owned[i]).Elem()) {
			out[i] = owned[i]
		} else {
			out[i] = copyOut(items, i)
		}
	})
	return dst, nil
}

// appendUnstructuredHeld is AppendOwned for an unstructured list with
// stand-ins: held[i] where it is not nil, else what
// EachListItemWithAlloc gives for item i (a new Unstructured on its
// map). Its owned allocations are not needed: an unstructured item is a
// map behind one word.
func appendUnstructuredHeld(dst []interface{}, u *unstructured.UnstructuredList, held []any) ([]interface{}, error) {
	if len(held) != len(u.Items) {
		return dst, fmt.Errorf("listitems: %d unstructured items, %d stand-ins or none", len(u.Items), len(held))
	}
	for i := range u.Items {
		if held[i] != nil {
			dst = append(dst, held[i])
		} else {
			dst = append(dst, &unstructured.Unstructured{Object: u.Items[i].Object})
		}
	}
	return dst, nil
}

// ownedFits says whether owned (with held, if not nil) stands for list's
// items one by one: a slice of structs of their length, and a pointer to
// such a struct for each item held does not stand in for.
func ownedFits(list runtime.Object, owned []runtime.Object, held []any) bool {
	items, ok := structItems(list)
	if owned == nil || !ok || items.Len() != len(owned) || (held != nil && len(held) != len(owned)) {
		return false
	}
	ptr := reflect.PointerTo(items.Type().Elem())
	for i, o := range owned {
		if held != nil && held[i] != nil {
			continue
		}
		if reflect.TypeOf(o) != ptr || reflect.ValueOf(o).IsNil() {
			return false
		}
	}
	return true
}

// sameStruct says whether the addressable structs a and b, of one type,
// hold the same bytes: the same field values, pointers compared as
// addresses, as a struct copy leaves them (padding included).
func sameStruct(a, b reflect.Value) bool {
	size := a.Type().Size()
	pa := unsafe.Slice((*byte)(a.Addr().UnsafePointer()), size)
	pb := unsafe.Slice((*byte)(b.Addr().UnsafePointer()), size)
	return bytes.Equal(pa, pb)
}

// structItems is list's Items if it is an addressable slice of structs
// whose pointers are runtime.Objects (and not RawExtensions, which
// EachListItemWithAlloc unwraps).
func structItems(list runtime.Object) (reflect.Value, bool) {
	if _, ok := list.(runtime.Unstructured); ok {
		return reflect.Value{}, false
	}
	ptr, err := meta.GetItemsPtr(list)
	if err != nil {
		return reflect.Value{}, false
	}
	v := reflect.ValueOf(ptr)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Slice {
		return reflect.Value{}, false
	}
	items := v.Elem()
	elem := items.Type().Elem()
	if elem.Kind() != reflect.Struct || elem == reflect.TypeFor[runtime.RawExtension]() || !reflect.PointerTo(elem).Implements(objectType) {
		return reflect.Value{}, false
	}
	return items, true
}
