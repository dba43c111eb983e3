package watchdecode

import (
	"bytes"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kreflector/cache/internal/jsonmeta"
)

// heldFunc is Options.Held.
type heldFunc = func(namespace, name, rv string) (runtime.Object, bool)

// addedPrefix begins an ADDED event as kube-apiserver writes it in JSON
// (a metav1.WatchEvent, encoded compact).
var addedPrefix = []byte(`{"type":"ADDED","object":`)

// addedObject returns the object of payload, a JSON frame from its '{' to
// its '}', if the frame begins as kube-apiserver writes an ADDED event
// and what follows is an object. Where the frame's object has two
// members (the splitter counts the commas between them), what follows
// the prefix is the value of "object", the one the chain decodes:
// "type" and "object" are then each present once, keys exact.
func addedObject(payload []byte) ([]byte, bool) {
	// The splitter ends a frame at the bracket that closes its depth,
	// whichever: a ']' there is no object's end.
	if len(payload) < len(addedPrefix)+3 || !bytes.HasPrefix(payload, addedPrefix) || payload[len(payload)-1] != '}' {
		return nil, false
	}
	obj := bytes.TrimRight(payload[len(addedPrefix):len(payload)-1], " \t\r\n")
	if len(obj) < 2 || obj[0] != '{' || obj[len(obj)-1] != '}' {
		return nil, false
	}
	return obj, true
}

// jsonHeld answers Options.Held's questions for a JSON stream's initial
// ADDED events, on one worker: it reads an object's identity from its
// bytes (internal/jsonmeta) as the chain's decoding of its kind would set
// it. What the chain makes of a kind is learned from its first object of
// that apiVersion and kind (the scheme maps a kind to one type for good),
// which is decoded.
type jsonHeld struct {
	kinds map[typeKey]jsonKind
}

// jsonKind is how the chain decodes the objects of a kind.
type jsonKind uint8

const (
	jsonOther jsonKind = iota // into a type whose identity is not read
	jsonTyped                 // into a type whose ObjectMeta is its "metadata" (jsonmeta.MetaType)
	jsonMap                   // into an unstructured object
)

func newJSONHeld() *jsonHeld { return &jsonHeld{kinds: map[typeKey]jsonKind{}} }

// standIn returns (ok) the ADDED event of held's object for payload, an
// initial ADDED event's frame, when held answers for its object's
// identity. Otherwise the frame is to be decoded, and learn, if set, is
// its kind, not known yet, to learn from the decoded object.
func (h *jsonHeld) standIn(payload []byte, held heldFunc) (ev watch.Event, learn *typeKey, ok bool) {
	obj, ok := addedObject(payload)
	if !ok {
		return ev, nil, false
	}
	m, ok := jsonmeta.Read(obj)
	if !ok || len(m.APIVersion) == 0 || len(m.Kind) == 0 {
		return ev, nil, false
	}
	kind, known := h.kinds[typeKey{apiVersion: view(m.APIVersion), kind: view(m.Kind)}]
	switch {
	case !known:
		return ev, &typeKey{apiVersion: string(m.APIVersion), kind: string(m.Kind)}, false
	case kind == jsonOther, kind == jsonMap && !m.Map(), len(m.Name) == 0, len(m.ResourceVersion) == 0:
		return ev, nil, false
	}
	o, ok := held(view(m.Namespace), view(m.Name), view(m.ResourceVersion))
	if !ok {
		return ev, nil, false
	}
	return watch.Event{Type: watch.Added, Object: o}, nil, true
}

// learn records how the chain decoded key's object obj.
func (h *jsonHeld) learn(key typeKey, obj runtime.Object) {
	t := reflect.TypeOf(obj)
	switch {
	case t == reflect.TypeFor[*unstructured.Unstructured]():
		h.kinds[key] = jsonMap
	case t != nil && t.Kind() == reflect.Pointer && jsonmeta.MetaType(t.Elem()):
		h.kinds[key] = jsonTyped
	default:
		h.kinds[key] = jsonOther
	}
}
