package lean

import (
	"reflect"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A plan says where, in a value of one Go type, the strings and byte
// slices are that sharing (see shareObjectIn) replaces: a list of steps at
// offsets from the value's address, with the fields of structs held by
// value laid out flat. Plans are built once per type, through reflection,
// and cached; walking one needs no reflection except for maps other than
// map[string]string and for interfaces.
type plan struct{ steps []walkStep }

// walkKind is what a step finds at its offset.
type walkKind uint8

const (
	walkString       walkKind = iota // a string (any type of kind string)
	walkBytes                        // a []byte (any slice of kind-uint8 elements)
	walkPointer                      // a pointer to a value elem describes
	walkSlice                        // a slice of values elem describes, size bytes apart
	walkArray                        // n values elem describes, size bytes apart
	walkStringMap                    // a map[string]string
	walkJSONMap                      // a map[string]interface{} (JSON content)
	walkResourceList                 // a corev1.ResourceList
	walkMap                          // another map whose keys are strings or whose values elem describes
	walkInterface                    // an interface value of type typ
)

type walkStep struct {
	off  uintptr
	kind walkKind
	// elem describes the values a pointer, slice, array or map holds; nil
	// when they need nothing (a map whose keys alone are strings).
	elem *plan
	// size is the element size of a slice or array, n an array's length.
	size, n uintptr
	// typ is the type of a map or interface, walked through reflect.
	typ reflect.Type
	// shareable says a map of typ is shared whole under ShareMaps.
	shareable bool
}

// planCache holds the plans of one kind, built on first use.
type planCache struct {
	plans sync.Map // reflect.Type -> *plan
	// own says the plans include the fields ownField names: sharing
	// across objects leaves them out, adopting from the object's own
	// held version (adopt.go) wants them most.
	own bool
}

var (
	// sharePlans are the plans of sharing across objects, heldPlans
	// those of adopting a held object's values.
	sharePlans = &planCache{}
	heldPlans  = &planCache{own: true}
	// planning serializes the building of plans, which may refer to each
	// other (recursive types).
	planning sync.Mutex
)

var (
	stringMapType  = reflect.TypeFor[map[string]string]()
	jsonMapType    = reflect.TypeFor[map[string]interface{}]()
	objectMetaType = reflect.TypeFor[metav1.ObjectMeta]()
	// resourceListType is walked without reflection: every container of
	// every Pod has two.
	resourceListType = reflect.TypeFor[corev1.ResourceList]()
	// A container's ID names one run of one container: no other object
	// holds it.
	containerStatusType     = reflect.TypeFor[corev1.ContainerStatus]()
	containerTerminatedType = reflect.TypeFor[corev1.ContainerStateTerminated]()
)

// ownField says whether field name of struct type t holds a value that
// is the object's own, never equal to another object's of the resource:
// its name, uid and resourceVersion, and a container's ID in a Pod's
// status. Sharing skips them: a table entry for a value met once costs
// memory and work for nothing.
func ownField(t reflect.Type, name string) bool {
	switch t {
	case objectMetaType:
		return ownMetadataField(name)
	case containerStatusType, containerTerminatedType:
		return name == "ContainerID"
	}
	return false
}

// ownMetadataField: the same, by the field's name in JSON or Go.
func ownMetadataField(name string) bool {
	switch name {
	case "Name", "UID", "ResourceVersion", "name", "uid", "resourceVersion":
		return true
	}
	return false
}

// planFor returns the sharing plan of t (see sharePlans).
func planFor(t reflect.Type) *plan { return sharePlans.of(t) }

// of returns the plan of t, building it (and those it refers to) on
// first use.
func (c *planCache) of(t reflect.Type) *plan {
	if p, ok := c.plans.Load(t); ok {
		return p.(*plan)
	}
	planning.Lock()
	defer planning.Unlock()
	b := planBuilder{cache: c, built: map[reflect.Type]*plan{}, yes: map[reflect.Type]bool{}, visiting: map[reflect.Type]bool{}}
	p := b.plan(t)
	for t, p := range b.built {
		c.plans.Store(t, p)
	}
	return p
}

// planBuilder builds the plans of one planCache.of call. A plan is
// registered before its steps are computed, so a recursive type refers
// to its own (then still unfinished) plan; none is published before all
// are done.
type planBuilder struct {
	cache         *planCache
	built         map[reflect.Type]*plan
	yes, visiting map[reflect.Type]bool
}

func (b *planBuilder) plan(t reflect.Type) *plan {
	if p, ok := b.cache.plans.Load(t); ok {
		return p.(*plan)
	}
	if p, ok := b.built[t]; ok {
		return p
	}
	p := &plan{}
	b.built[t] = p
	p.steps = b.steps(t, 0, nil)
	return p
}

// steps appends the steps for a value of type t at offset off.
func (b *planBuilder) steps(t reflect.Type, off uintptr, steps []walkStep) []walkStep {
	if !b.holdsStrings(t) {
		return steps
	}
	switch t.Kind() {
	case reflect.String:
		return append(steps, walkStep{off: off, kind: walkString})
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && (b.cache.own || !ownField(t, f.Name)) {
				steps = b.steps(f.Type, off+f.Offset, steps)
			}
		}
		return steps
	case reflect.Pointer:
		return append(steps, walkStep{off: off, kind: walkPointer, elem: b.plan(t.Elem())})
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return append(steps, walkStep{off: off, kind: walkBytes})
		}
		return append(steps, walkStep{off: off, kind: walkSlice, elem: b.plan(t.Elem()), size: t.Elem().Size()})
	case reflect.Array:
		return append(steps, walkStep{off: off, kind: walkArray, elem: b.plan(t.Elem()), size: t.Elem().Size(), n: uintptr(t.Len())})
	case reflect.Map:
		return append(steps, b.mapStep(t, off))
	case reflect.Interface:
		return append(steps, walkStep{off: off, kind: walkInterface, typ: t})
	}
	return steps
}

func (b *planBuilder) mapStep(t reflect.Type, off uintptr) walkStep {
	switch t {
	case stringMapType:
		return walkStep{off: off, kind: walkStringMap}
	case jsonMapType:
		return walkStep{off: off, kind: walkJSONMap}
	case resourceListType:
		return walkStep{off: off, kind: walkResourceList}
	}
	s := walkStep{off: off, kind: walkMap, typ: t, shareable: shareableMap(t)}
	if b.holdsStrings(t.Elem()) {
		s.elem = b.plan(t.Elem())
	}
	return s
}

// holdsStrings says whether a value of type t can hold a string or byte
// slice that sharing would reach (through exported fields only). A type
// met again while its own answer is being worked out adds nothing on that
// path (a cycle reaches nothing its start does not), so it counts as no
// there; only yes is remembered, since a no found inside a cycle may be
// one of those provisional ones.
func (b *planBuilder) holdsStrings(t reflect.Type) bool {
	if b.yes[t] {
		return true
	}
	if b.visiting[t] {
		return false
	}
	b.visiting[t] = true
	v := b.computeHoldsStrings(t)
	delete(b.visiting, t)
	if v {
		b.yes[t] = true
	}
	return v
}

func (b *planBuilder) computeHoldsStrings(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Interface:
		return true
	case reflect.Slice:
		return t.Elem().Kind() == reflect.Uint8 || b.holdsStrings(t.Elem())
	case reflect.Pointer, reflect.Array:
		return b.holdsStrings(t.Elem())
	case reflect.Map:
		return t.Key().Kind() == reflect.String || b.holdsStrings(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && b.holdsStrings(f.Type) {
				return true
			}
		}
	}
	return false
}
