package listdecode

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/kreflector/cache/internal/protometa"
)

// protoUnmarshaler is what gogo-generated types have: Unmarshal decodes a
// message into a value, as a list's generated Unmarshal decodes each item
// (into a zero value appended to Items).
type protoUnmarshaler interface {
	Unmarshal([]byte) error
}

// itemDecoder is how the plan's client decodes one item of a list body of
// the given media type, into dst, a zero element of Items:
//   - typed and metadata JSON: the JSON serializer's unmarshal of the list
//     (sigs.k8s.io/json, case-sensitive, ints preserved) does this for each
//     element of the items array;
//   - protobuf: the list's generated Unmarshal appends a zero item and
//     calls the item's Unmarshal (without the item's managedFields if
//     noManagedFields and its type allows: see Options);
//   - unstructured: UnstructuredJSONScheme's decodeToList decodes each item
//     into a new map, and the item is that map (nil for null); the kind and
//     apiVersion taken from the list are set once the list's are known
//     (fillKinds).
func (p *plan) itemDecoder(media string, noManagedFields bool) func([]byte, reflect.Value) error {
	switch {
	case p.mode == unstructuredMode:
		return func(data []byte, dst reflect.Value) error {
			m := make(map[string]interface{})
			if err := utiljson.Unmarshal(data, &m); err != nil {
				return err
			}
			dst.Addr().Interface().(*unstructured.Unstructured).Object = m
			return nil
		}
	case media == mediaProtobuf:
		if d := protometa.For(p.itemsType.Elem()); noManagedFields && d != nil {
			return d.Unmarshal
		}
		return func(data []byte, dst reflect.Value) error {
			return dst.Addr().Interface().(protoUnmarshaler).Unmarshal(data)
		}
	default:
		list := p.listType.Name()
		return func(data []byte, dst reflect.Value) error {
			return inList(utiljson.Unmarshal(data, dst.Addr().Interface()), list)
		}
	}
}

// inList words a type error of an item as the list's decode words it: the
// path of the field from the list (items.…), and the list's type where
// the item itself has the wrong type.
func inList(err error, list string) error {
	te, ok := err.(*json.UnmarshalTypeError)
	if !ok {
		return err
	}
	if te.Struct == "" {
		te.Struct, te.Field = list, "items"
	} else {
		te.Field = "items." + te.Field
	}
	return te
}

// fillKinds does what decodeToList does last for each item: an item with
// neither a kind nor an apiVersion (as strings) gets the list's apiVersion
// and its kind without the "List" suffix. Items held stands in for (not
// decoded: see Options.Held) are left as they are.
func fillKinds(items []unstructured.Unstructured, list *unstructured.UnstructuredList, held []any) {
	apiVersion := list.GetAPIVersion()
	kind := trimList(list.GetKind())
	for i := range items {
		u := &items[i]
		if i < len(held) && held[i] != nil {
			continue
		}
		if len(u.GetKind()) == 0 && len(u.GetAPIVersion()) == 0 {
			u.SetKind(kind)
			u.SetAPIVersion(apiVersion)
		}
	}
}

func trimList(kind string) string {
	if len(kind) >= 4 && kind[len(kind)-4:] == "List" {
		return kind[:len(kind)-4]
	}
	return kind
}

// itemErrors keeps the error a client's decode of the whole list would
// return, from the items' outcomes arriving in any order: a JSON syntax
// error anywhere wins (client-go checks the whole body's syntax before
// decoding); then, for typed JSON, the first item's error that stops
// encoding/json (one that is not an *json.UnmarshalTypeError, which it
// saves and returns only at the end), then the first type error; for
// protobuf and unstructured items, the first item's error. Its methods
// are safe for concurrent use.
type itemErrors struct {
	json, typed bool

	mu                   sync.Mutex
	syntax, hard, saved  error
	syntaxAt, hardAt, at int
	// floor is the first item whose errors other than syntax count (see
	// from).
	floor int
}

func newItemErrors(isJSON, typed bool) *itemErrors {
	return &itemErrors{json: isJSON, typed: typed, syntaxAt: math.MaxInt, hardAt: math.MaxInt, at: math.MaxInt}
}

// decided reports whether item i no longer needs decoding: an earlier
// item has decided the error (it still needs a syntax check, in JSON).
func (e *itemErrors) decided(i int) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.syntaxAt < i || e.hardAt < i
}

// add records item i's outcome: err from decoding data, or, if checkOnly,
// only the syntax of data.
func (e *itemErrors) add(i int, data []byte, err error, checkOnly bool) {
	if checkOnly || (err != nil && e.json && !isTypeError(err)) {
		if e.json && !json.Valid(data) {
			e.set(&e.syntax, &e.syntaxAt, i, stdSyntax(data))
			return
		}
	}
	if err == nil {
		return
	}
	if e.json && e.typed && isTypeError(err) {
		e.set(&e.saved, &e.at, i, err)
		return
	}
	e.set(&e.hard, &e.hardAt, i, err)
}

func (e *itemErrors) set(dst *error, at *int, i int, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if i < *at && (dst == &e.syntax || i >= e.floor) {
		*dst, *at = err, i
	}
}

// from makes the errors of items before i, but their syntax errors, count
// no more, those already recorded and those still to come: items the
// client only parses (see jsonSplit.lastItems).
func (e *itemErrors) from(i int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.floor = i
	if e.hardAt < i {
		e.hard, e.hardAt = nil, math.MaxInt
	}
	if e.at < i {
		e.saved, e.at = nil, math.MaxInt
	}
}

// err is the error of the whole list's items, nil if none, and the index
// of the item it is from; syntax tells whether it is a JSON syntax error
// (already worded as client-go's).
func (e *itemErrors) err() (err error, at int, syntax bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.syntax != nil:
		return e.syntax, e.syntaxAt, true
	case e.hard != nil:
		return e.hard, e.hardAt, false
	}
	return e.saved, e.at, false
}

func isTypeError(err error) bool {
	_, ok := err.(*json.UnmarshalTypeError)
	return ok
}

// stdSyntax is the error client-go's JSON decoders return for a body with
// invalid JSON in it: its serializer's Interpret parses the body with
// encoding/json before anything else, and words the failure so.
func stdSyntax(data []byte) error {
	var v struct{}
	err := json.Unmarshal(data, &v)
	return interpretError(err)
}

func interpretError(err error) error {
	return fmt.Errorf("couldn't get version/kind; json parse error: %v", err)
}
