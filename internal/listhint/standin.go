package listhint

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Standin is the object of an ADDED watch event that a ListWatch did not
// decode because the Reflector's HeldFunc answered for it (see the
// package documentation): Held is what HeldFunc returned, and
// ResourceVersion the event's object's. Only the Reflector that offered
// HeldFunc ever receives one.
type Standin struct {
	Held            any
	ResourceVersion string
}

// GetObjectKind is the empty kind: a Standin is no API object.
func (*Standin) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject copies the Standin; Held is the same object.
func (s *Standin) DeepCopyObject() runtime.Object {
	c := *s
	return &c
}
