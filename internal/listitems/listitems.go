// Package listitems takes the items out of a list as the Reflector
// stores them: each in an allocation of its own, as
// meta.EachListItemWithAlloc does, so that an object the cache keeps
// does not keep its whole list alive; for a large list of typed items,
// on several goroutines at once.
package listitems

import (
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
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
	per := (n + workers - 1) / workers
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += per {
		hi := min(lo+per, n)
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				c := reflect.New(items.Type().Elem())
				c.Elem().Set(items.Index(i))
				out[i] = c.Interface().(runtime.Object)
			}
		})
	}
	wg.Wait()
	return dst, nil
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
