package watchdecode

import (
	"bytes"
	"reflect"
	"strings"
	"unsafe"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kreflector/cache/internal/protometa"
)

// protoPrefix begins every object the protobuf Serializer decodes.
var protoPrefix = []byte{'k', '8', 's', 0}

// protoUnmarshaler is what a generated type has, and what the protobuf
// serializer calls on the object it creates.
type protoUnmarshaler interface {
	Reset()
	Unmarshal([]byte) error
}

// protoFast decodes, with no copy of its bytes, a protobuf frame of the
// shape kube-apiserver writes, into the event the client's chain makes of
// it. The chain (streaming decoder, WatchEvent, RawExtension, Unknown)
// copies an object's bytes three times before the object's own Unmarshal
// reads them; for realistic Pods that is a third of what a watch stream
// allocates. It applies only to the chain a clientset negotiates: the
// RawSerializer of WatchEvents and the protobuf Serializer of objects
// under WithoutVersionDecoder; those decode an object as: a new object of
// the type the scheme registers for the Unknown's apiVersion and kind,
// Reset, Unmarshal of the Unknown's raw bytes, the kind set, then cleared.
//
// A frame of any other shape, or whose object fails to unmarshal, is left
// to the chain (ok false), which gives its result or error. The type of
// an apiVersion and kind is learned from the chain's first object of
// them: the scheme maps a kind to one type for good. A protoFast is one
// worker's.
type protoFast struct {
	types map[typeKey]fastType
	// noManagedFields says objects are decoded without their
	// managedFields where their type allows it.
	noManagedFields bool
}

// fastType is a type decode makes, its decoder without managedFields
// (nil: decoded whole), and whether its metadata is its field 1
// (protometa.For), where Options.Held may read its identity.
type fastType struct {
	t    reflect.Type
	lean *protometa.Decoder
	meta bool
}

type typeKey struct{ apiVersion, kind string }

// newProtoFast is the fast decoding of st, or nil if st is not the chain
// it reproduces; noManagedFields lets it leave managedFields out.
func newProtoFast(st *streams, noManagedFields bool) *protoFast {
	if st == nil || st.framing != framingLength {
		return nil
	}
	wd, ok := st.objects.(runtime.WithoutVersionDecoder)
	if !ok {
		return nil
	}
	if _, ok := wd.Decoder.(*protobuf.Serializer); !ok {
		return nil
	}
	if _, ok := st.events.(*protobuf.RawSerializer); !ok {
		return nil
	}
	return &protoFast{types: map[typeKey]fastType{}, noManagedFields: noManagedFields}
}

// fastFrameMax bounds the frames decoded fast: the streaming decoder
// refuses frames above 16 MiB, which the chain is left to report.
const fastFrameMax = 8 << 20

// decode returns frame's event and ok, or, if the chain is to decode the
// frame, ok false and, if frame has the expected shape but its kind is
// not known yet, the key to learn once the chain has decoded it. With
// held set, an ADDED event whose object's identity held answers for is
// the event of held's object instead, not decoded (standIn).
func (f *protoFast) decode(frame []byte, held func(namespace, name, rv string) (runtime.Object, bool)) (ev watch.Event, learn *typeKey, standIn, ok bool) {
	if len(frame) == 0 || len(frame) > fastFrameMax {
		return ev, nil, false, false
	}
	typ, raw, ok := watchEventFields(frame)
	if !ok || !validEventType(typ) || len(raw) <= len(protoPrefix) || !bytes.HasPrefix(raw, protoPrefix) {
		return ev, nil, false, false
	}
	key, data, ok := unknownFields(raw[len(protoPrefix):])
	if !ok {
		return ev, nil, false, false
	}
	t, known := f.types[key]
	if !known {
		return ev, &key, false, false
	}
	if held != nil && t.meta && typ == string(watch.Added) {
		if obj, ok := heldFor(data, held); ok {
			return watch.Event{Type: watch.Added, Object: obj}, nil, true, true
		}
	}
	v := reflect.New(t.t.Elem())
	obj := v.Interface().(runtime.Object)
	u := obj.(protoUnmarshaler)
	u.Reset()
	if t.unmarshal(u, data, v) != nil {
		return ev, nil, false, false
	}
	obj.GetObjectKind().SetGroupVersionKind(schema.FromAPIVersionAndKind(key.apiVersion, key.kind))
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return watch.Event{Type: watch.EventType(typ), Object: obj}, nil, false, true
}

// heldFor asks held about data, an object's bytes, by the identity they
// hold, when they hold a name and a resourceVersion.
func heldFor(data []byte, held func(namespace, name, rv string) (runtime.Object, bool)) (runtime.Object, bool) {
	ns, name, rv, ok := protometa.Identity(data)
	if !ok || len(name) == 0 || len(rv) == 0 {
		return nil, false
	}
	return held(view(ns), view(name), view(rv))
}

// view is b as a string sharing its bytes, valid while b is unchanged.
func view(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// learnType records the type of obj, the chain's object of key, if it is
// one decode can make: a generated type of Kubernetes' own API packages,
// whose Unmarshal copies every string and byte slice out of its input.
// decode hands Unmarshal the reader's buffer, reused once the frame is
// delivered, where the chain hands it a copy; a type of any other package
// (an aggregated API's, hand-written or generated otherwise) might keep a
// slice of its input, so it stays with the chain.
func (f *protoFast) learnType(key typeKey, obj runtime.Object) {
	t := reflect.TypeOf(obj)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct || !copiesItsInput(t.Elem().PkgPath()) {
		return
	}
	if _, ok := obj.(protoUnmarshaler); ok {
		ft := fastType{t: t, meta: protometa.For(t.Elem()) != nil}
		if f.noManagedFields {
			ft.lean = protometa.For(t.Elem())
		}
		f.types[key] = ft
	}
}

// unmarshal decodes data into u, which ptr points to.
func (t fastType) unmarshal(u protoUnmarshaler, data []byte, ptr reflect.Value) error {
	if t.lean != nil {
		return t.lean.Unmarshal(data, ptr.Elem())
	}
	return u.Unmarshal(data)
}

// copiesItsInput says whether pkg is one of the packages whose generated
// Unmarshal keeps nothing of its input (checked for client-go 0.37's).
func copiesItsInput(pkg string) bool {
	return strings.HasPrefix(pkg, "k8s.io/api/") || strings.HasPrefix(pkg, "k8s.io/apimachinery/pkg/apis/")
}

// validEventType is rest/watch's Decoder's check of an event's type.
func validEventType(t string) bool {
	switch watch.EventType(t) {
	case watch.Added, watch.Modified, watch.Deleted, watch.Error, watch.Bookmark:
		return true
	}
	return false
}

// watchEventFields reads a WatchEvent (type = 1, object = 2, a
// RawExtension whose raw = 1), each field once.
func watchEventFields(frame []byte) (typ string, raw []byte, ok bool) {
	var ev [2][]byte
	if !protoFields(frame, ev[:]) || ev[0] == nil || ev[1] == nil {
		return "", nil, false
	}
	var ext [1][]byte
	if !protoFields(ev[1], ext[:]) || ext[0] == nil {
		return "", nil, false
	}
	return string(ev[0]), ext[0], true
}

// unknownFields reads a runtime.Unknown (typeMeta = 1 with apiVersion = 1
// and kind = 2, raw = 2, contentEncoding = 3, contentType = 4), which the
// Serializer decodes by its apiVersion and kind alone; both must be set.
func unknownFields(b []byte) (key typeKey, raw []byte, ok bool) {
	var unk [4][]byte
	if !protoFields(b, unk[:]) || unk[0] == nil {
		return key, nil, false
	}
	var tm [2][]byte
	if !protoFields(unk[0], tm[:]) || len(tm[0]) == 0 || len(tm[1]) == 0 {
		return key, nil, false
	}
	key = typeKey{apiVersion: string(tm[0]), kind: string(tm[1])}
	if gv, err := schema.ParseGroupVersion(key.apiVersion); err != nil || gv.Version == "" {
		return key, nil, false
	}
	return key, unk[1], true
}

// protoFields sets out[n-1] to the bytes of field n of msg (never nil
// once set), for a message whose fields are all length-delimited,
// numbered 1 to len(out), each at most once, with one-byte tags; false
// for any other message (which the generated code may still take).
func protoFields(msg []byte, out [][]byte) bool {
	for len(msg) > 0 {
		tag := msg[0]
		n, wire := int(tag>>3), tag&7
		if tag >= 0x80 || wire != 2 || n < 1 || n > len(out) || out[n-1] != nil {
			return false
		}
		size, start, ok := protometa.Varint(msg, 1)
		if !ok || size > uint64(len(msg)-start) {
			return false
		}
		out[n-1] = msg[start : start+int(size) : start+int(size)]
		msg = msg[start+int(size):]
	}
	return true
}
