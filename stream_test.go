package cache

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// valueObject is a runtime.Object held by value, not by pointer.
type valueObject struct{ n int }

func (valueObject) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (o valueObject) DeepCopyObject() runtime.Object { return o }

// emptyObject is a zero-size runtime.Object held by value.
type emptyObject struct{}

func (emptyObject) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (o emptyObject) DeepCopyObject() runtime.Object { return o }

// isNilObject reads the interface's data word; this pins its answers to
// what reflect says for every shape an object can have.
func TestIsNilObject(t *testing.T) {
	for name, tc := range map[string]struct {
		obj  runtime.Object
		want bool
	}{
		"nil interface":          {nil, true},
		"typed nil pointer":      {(*corev1.ConfigMap)(nil), true},
		"typed nil unstructured": {(*unstructured.Unstructured)(nil), true},
		"pointer":                {&corev1.ConfigMap{}, false},
		"unstructured":           {&unstructured.Unstructured{}, false},
		"value":                  {valueObject{n: 1}, false},
		"zero value":             {valueObject{}, false},
		"zero-size value":        {emptyObject{}, false},
	} {
		if got := isNilObject(tc.obj); got != tc.want {
			t.Errorf("%s: isNilObject = %v, want %v", name, got, tc.want)
		}
		v := reflect.ValueOf(tc.obj)
		if byReflect := !v.IsValid() || v.Kind() == reflect.Pointer && v.IsNil(); byReflect != tc.want {
			t.Errorf("%s: reflect says nil = %v, the table %v", name, byReflect, tc.want)
		}
	}
}
