package lean

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// DropManagedFields removes obj's managedFields, typed or unstructured, in
// place; an object without metadata is left as it is.
func DropManagedFields(obj runtime.Object) {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		unstructured.RemoveNestedField(o.Object, "metadata", "managedFields")
	case metav1.Object:
		if o.GetManagedFields() != nil {
			o.SetManagedFields(nil)
		}
	default:
		if m, err := meta.Accessor(obj); err == nil && m.GetManagedFields() != nil {
			m.SetManagedFields(nil)
		}
	}
}
