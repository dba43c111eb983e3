package cachetest

import (
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Type describes a resource a Server serves.
type Type struct {
	// Group is the API group ("" for the core group). For Unstructured
	// objects it defaults to the group of Object's apiVersion.
	Group string
	// Resource is the plural lower-case name, e.g. "configmaps".
	Resource string
	// Object is an example of the stored type, e.g. &corev1.ConfigMap{},
	// or an *unstructured.Unstructured with apiVersion and kind set.
	Object runtime.Object
	// List is an example of the list type, e.g. &corev1.ConfigMapList{}.
	// Leave it nil for Unstructured: lists are UnstructuredLists of kind
	// Object's kind + "List".
	List runtime.Object
	// ClusterScoped objects have no namespace.
	ClusterScoped bool
}

// resourceType is a validated Type.
type resourceType struct {
	id            string
	gr            schema.GroupResource
	objType       reflect.Type
	listType      reflect.Type
	gvk           schema.GroupVersionKind // set for Unstructured only
	clusterScoped bool
}

// newResourceType validates t; programmer errors panic, as they are found
// at set-up and would otherwise surface as confusing failures later.
func newResourceType(t Type) *resourceType {
	if t.Resource == "" {
		panic("cachetest: Type.Resource is empty")
	}
	if t.Object == nil || reflect.TypeOf(t.Object).Kind() != reflect.Pointer {
		panic(fmt.Sprintf("cachetest: Type.Object of %q must be a pointer to an object, got %T", t.Resource, t.Object))
	}
	rt := &resourceType{gr: schema.GroupResource{Group: t.Group, Resource: t.Resource}, objType: reflect.TypeOf(t.Object), clusterScoped: t.ClusterScoped}
	if u, ok := t.Object.(*unstructured.Unstructured); ok {
		rt.gvk = u.GroupVersionKind()
		if rt.gvk.Kind == "" || rt.gvk.Version == "" {
			panic(fmt.Sprintf("cachetest: the Unstructured Type.Object of %q needs apiVersion and kind", t.Resource))
		}
		if rt.gr.Group == "" {
			rt.gr.Group = rt.gvk.Group
		}
		rt.listType = reflect.TypeOf(&unstructured.UnstructuredList{})
	} else {
		if t.List == nil || !meta.IsListType(t.List) || reflect.TypeOf(t.List).Kind() != reflect.Pointer {
			panic(fmt.Sprintf("cachetest: Type.List of %q must be a pointer to a list type, got %T", t.Resource, t.List))
		}
		rt.listType = reflect.TypeOf(t.List)
	}
	rt.id = rt.gr.String()
	return rt
}

func (t *resourceType) sameAs(o *resourceType) bool {
	return t.objType == o.objType && t.listType == o.listType && t.gvk == o.gvk && t.clusterScoped == o.clusterScoped
}

// newObject returns an empty object of the type (with apiVersion and kind
// for Unstructured).
func (t *resourceType) newObject() runtime.Object {
	obj := reflect.New(t.objType.Elem()).Interface().(runtime.Object)
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u.SetGroupVersionKind(t.gvk)
	}
	return obj
}

// newList returns a list holding copies of items, at resourceVersion rv.
func (t *resourceType) newList(items []runtime.Object, rv, cont string, remaining *int64) (runtime.Object, error) {
	list := reflect.New(t.listType.Elem()).Interface().(runtime.Object)
	if u, ok := list.(*unstructured.UnstructuredList); ok {
		u.SetGroupVersionKind(t.gvk.GroupVersion().WithKind(t.gvk.Kind + "List"))
	}
	copies := make([]runtime.Object, len(items))
	for i, o := range items {
		copies[i] = o.DeepCopyObject()
	}
	if err := meta.SetList(list, copies); err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("building %s list: %w", t.gr, err))
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("building %s list: %w", t.gr, err))
	}
	lm.SetResourceVersion(rv)
	lm.SetContinue(cont)
	lm.SetRemainingItemCount(remaining)
	return list, nil
}

// bookmark returns a BOOKMARK object: the type with only its
// resourceVersion (and, for the end of initial events, the annotation).
func (t *resourceType) bookmark(rv uint64, initialEnd bool) runtime.Object {
	obj := t.newObject()
	m, _ := meta.Accessor(obj)
	m.SetResourceVersion(formatRV(rv))
	if initialEnd {
		m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	}
	return obj
}

// check verifies that obj is of the type; a wrong one is a bad request.
func (t *resourceType) check(obj runtime.Object) (metav1.Object, error) {
	if obj == nil || reflect.TypeOf(obj) != t.objType || reflect.ValueOf(obj).IsNil() {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("cachetest: %s holds %v objects, got %T", t.gr, t.objType, obj))
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if gvk := u.GroupVersionKind(); gvk != t.gvk && !gvk.Empty() {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("cachetest: %s holds %v objects, got %v", t.gr, t.gvk, gvk))
		}
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("cachetest: %T has no object metadata: %v", obj, err))
	}
	return m, nil
}

// prepare returns the copy of obj the server stores (with apiVersion and
// kind set for Unstructured).
func (t *resourceType) prepare(obj runtime.Object) runtime.Object {
	obj = obj.DeepCopyObject()
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u.SetGroupVersionKind(t.gvk)
	}
	return obj
}

// groupKind names the type in validation errors, as kube-apiserver does.
func (t *resourceType) groupKind() schema.GroupKind {
	if !t.gvk.Empty() {
		return t.gvk.GroupKind()
	}
	return schema.GroupKind{Group: t.gr.Group, Kind: t.objType.Elem().Name()}
}

// key is the store key of namespace and name.
func (t *resourceType) key(namespace, name string) string {
	if t.clusterScoped || namespace == "" {
		return name
	}
	return namespace + "/" + name
}
