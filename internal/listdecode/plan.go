package listdecode

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// mode is the kind of client whose decoding a plan reproduces.
type mode int

const (
	typedMode mode = iota
	unstructuredMode
	metadataMode
)

// plan is what Decode needs to know of a Target, worked out once per call:
// the list's Go type and where its items are on the wire, the list GVKs it
// streams, and the client's negotiated serializer.
type plan struct {
	mode      mode
	listType  reflect.Type // the list struct (not its pointer)
	itemsType reflect.Type // the Items slice
	itemsIdx  int          // Items' field index in listType
	jsonItems string       // the JSON key of Items
	protoItem int32        // the protobuf field number of Items; 0: no protobuf
	protoMeta int32        // the protobuf field number of ListMeta
	gvks      []schema.GroupVersionKind
	ns        runtime.NegotiatedSerializer
}

var errTarget = errors.New("listdecode: the Target must set exactly one of Typed, Unstructured and Metadata")

// newPlan checks t and works out its plan.
func newPlan(t Target) (*plan, error) {
	set := 0
	for _, b := range []bool{t.Typed != nil, t.Unstructured, t.Metadata} {
		if b {
			set++
		}
	}
	if set != 1 {
		return nil, errTarget
	}
	switch {
	case t.Unstructured:
		p, err := structPlan(reflect.TypeFor[unstructured.UnstructuredList]())
		if err != nil {
			return nil, err
		}
		p.mode, p.ns, p.protoItem = unstructuredMode, dynamic.ConfigFor(&rest.Config{}).NegotiatedSerializer, 0
		return p, nil
	case t.Metadata:
		p, err := structPlan(reflect.TypeFor[metav1.PartialObjectMetadataList]())
		if err != nil {
			return nil, err
		}
		p.mode, p.ns = metadataMode, metadata.ConfigFor(&rest.Config{}).NegotiatedSerializer
		p.gvks = []schema.GroupVersionKind{metav1.SchemeGroupVersion.WithKind("PartialObjectMetadataList")}
		return p, nil
	}
	return typedPlan(t.Typed)
}

// typedPlan is the plan of a clientset's list type, registered in
// client-go's kubernetes scheme.
func typedPlan(list runtime.Object) (*plan, error) {
	rt := reflect.TypeOf(list)
	if rt.Kind() != reflect.Pointer || rt.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("listdecode: Typed must be a pointer to a list struct, not %T", list)
	}
	p, err := structPlan(rt.Elem())
	if err != nil {
		return nil, err
	}
	gvks, _, err := scheme.Scheme.ObjectKinds(list)
	if err != nil {
		return nil, fmt.Errorf("listdecode: Typed %T: %w", list, err)
	}
	p.mode, p.gvks = typedMode, gvks
	p.ns = rest.CodecFactoryForGeneratedClient(scheme.Scheme, scheme.Codecs).WithoutConversion()
	return p, nil
}

// structPlan finds Items and the embedded ListMeta of a list struct, and
// their JSON and protobuf names.
func structPlan(lt reflect.Type) (*plan, error) {
	p := &plan{listType: lt, itemsIdx: -1}
	for i := range lt.NumField() {
		f := lt.Field(i)
		switch {
		case f.Name == "Items" && f.Type.Kind() == reflect.Slice:
			p.itemsIdx, p.itemsType = i, f.Type
			p.jsonItems, _, _ = strings.Cut(f.Tag.Get("json"), ",")
			p.protoItem = protoField(f.Tag.Get("protobuf"))
		case f.Anonymous && f.Type == reflect.TypeFor[metav1.ListMeta]():
			p.protoMeta = protoField(f.Tag.Get("protobuf"))
		}
	}
	if p.itemsIdx < 0 || p.jsonItems == "" {
		return nil, fmt.Errorf("listdecode: %v has no Items slice with a JSON name", lt)
	}
	return p, nil
}

// protoField is the field number in a protobuf struct tag
// ("bytes,2,rep,name=items"), or 0.
func protoField(tag string) int32 {
	parts := strings.Split(tag, ",")
	if len(parts) < 2 {
		return 0
	}
	n, err := strconv.ParseInt(parts[1], 10, 32)
	if err != nil {
		return 0
	}
	return int32(n)
}

// streams reports whether a body naming apiVersion and kind before its
// items decodes into this plan's list, so that its items can be split off:
// the kind must be the list's and the apiVersion one it is registered
// under. Unstructured always streams: the dynamic client decodes any body
// into an UnstructuredList.
func (p *plan) streams(apiVersion, kind string, seen bool) bool {
	if p.mode == unstructuredMode {
		return true
	}
	if !seen {
		return false
	}
	for _, gvk := range p.gvks {
		if kind == gvk.Kind && apiVersion == gvk.GroupVersion().String() {
			return true
		}
	}
	return false
}

// newList is a zero list of the plan's type.
func (p *plan) newList() runtime.Object {
	return reflect.New(p.listType).Interface().(runtime.Object)
}

// setItems sets list's Items to items (a slice of the plan's Items type).
func (p *plan) setItems(list runtime.Object, items reflect.Value) {
	reflect.ValueOf(list).Elem().Field(p.itemsIdx).Set(items)
}

// ownable says whether the items can be decoded into allocations of
// their own (Options.Owned): a typed or metadata list whose Items is a
// slice of structs whose pointers are runtime.Objects, as
// EachListItemWithAlloc copies them out one by one. An unstructured
// item is a map behind a struct of one word: nothing to save.
func (p *plan) ownable() bool {
	elem := p.itemsType.Elem()
	return p.mode != unstructuredMode && elem.Kind() == reflect.Struct &&
		reflect.PointerTo(elem).Implements(reflect.TypeFor[runtime.Object]())
}
