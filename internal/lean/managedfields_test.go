package lean

import "testing"

// managedFields go from typed and unstructured objects alike; the rest
// stays.
func TestDropManagedFields(t *testing.T) {
	typed, u := decodedPod(t, 0), decodedUnstructuredPod(t, 0)
	DropManagedFields(typed)
	DropManagedFields(u)
	if typed.ManagedFields != nil || u.GetManagedFields() != nil {
		t.Errorf("managedFields left: typed %d, unstructured %d", len(typed.ManagedFields), len(u.GetManagedFields()))
	}
	if typed.Name == "" || u.GetName() != typed.Name || len(u.GetLabels()) != len(typed.Labels) {
		t.Error("more than managedFields went")
	}
}
