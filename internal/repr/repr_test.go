package repr

import (
	"reflect"
	"testing"
	"unsafe"
)

type point struct{ x, y int }

// Same agrees with identity: the same pointer, the same boxed copy; not
// an equal value in another box, nor another type with the same word.
func TestSame(t *testing.T) {
	p := &point{1, 2}
	m := map[string]int{}
	// Values not known at compile time, so each conversion boxes anew.
	n := len(m) + 1
	boxed, other := any(point{n, 2}), any(point{n, 2})
	for name, tc := range map[string]struct {
		a, b any
		want bool
	}{
		"one pointer":           {p, p, true},
		"equal pointees":        {p, &point{1, 2}, false},
		"one boxed copy":        {boxed, boxed, true},
		"two boxes":             {boxed, other, false},
		"uncomparable, one map": {m, m, true},
		"another type":          {p, unsafe.Pointer(p), false},
		"both nil":              {nil, nil, true},
		"nil and typed nil":     {nil, (*point)(nil), false},
	} {
		if got := Same(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: Same = %v, want %v", name, got, tc.want)
		}
	}
}

// IsNil agrees with reflect for every shape a value can have.
func TestIsNil(t *testing.T) {
	for name, v := range map[string]any{
		"nil": nil, "typed nil pointer": (*point)(nil), "pointer": &point{},
		"value": point{1, 2}, "zero value": point{}, "zero-size value": struct{}{},
	} {
		r := reflect.ValueOf(v)
		want := !r.IsValid() || r.Kind() == reflect.Pointer && r.IsNil()
		if got := IsNil(v); got != want {
			t.Errorf("%s: IsNil = %v, reflect says %v", name, got, want)
		}
	}
}

func TestSameMap(t *testing.T) {
	a, b := map[string]string{"k": "v"}, map[string]string{"k": "v"}
	c := a
	if !SameMap(a, c) || SameMap(a, b) {
		t.Errorf("SameMap(a, a) = %v, SameMap(a, equal b) = %v", SameMap(a, c), SameMap(a, b))
	}
	if got, want := SameMap(a, b), reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer(); got != want {
		t.Errorf("SameMap = %v, reflect says %v", got, want)
	}
}

// SliceAt reads what reflect reports for slices of several element types.
func TestSliceAt(t *testing.T) {
	ints, pts, empty := make([]int, 3, 8), []point{{1, 2}}, []string(nil)
	for name, p := range map[string]any{"ints": &ints, "structs": &pts, "nil": &empty} {
		s := reflect.ValueOf(p).Elem()
		data, n := SliceAt(reflect.ValueOf(p).UnsafePointer())
		if data != s.UnsafePointer() || n != s.Len() {
			t.Errorf("%s: SliceAt = %p, %d; reflect says %p, %d", name, data, n, s.UnsafePointer(), s.Len())
		}
	}
}

func TestField(t *testing.T) {
	type inner struct{ n int }
	type holder struct {
		hidden *inner
		Shown  string
		count  int
	}
	in := &inner{n: 3}
	h := &holder{hidden: in, Shown: "s", count: 7}
	if got, ok := Field[*inner](h, "hidden"); !ok || got != in {
		t.Fatalf("Field(hidden) = %v, %v", got, ok)
	}
	if got, ok := Field[string](h, "Shown"); !ok || got != "s" {
		t.Fatalf("Field(Shown) = %q, %v", got, ok)
	}
	if got, ok := Field[int](h, "count"); !ok || got != 7 {
		t.Fatalf("Field(count) = %d, %v", got, ok)
	}
	if _, ok := Field[string](h, "count"); ok {
		t.Fatal("a field of another type was read")
	}
	if _, ok := Field[int](h, "missing"); ok {
		t.Fatal("a missing field was read")
	}
	if _, ok := Field[int](*h, "count"); ok {
		t.Fatal("a struct that is not behind a pointer was read")
	}
	var none *holder
	if _, ok := Field[int](none, "count"); ok {
		t.Fatal("a nil pointer was read")
	}
}
