package jsonmeta

import (
	"encoding/json"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/kreflector/cache/internal/podgen"
)

// identityCases are items with the identity Identity must read
// (ok) or refuse to.
var identityCases = []struct {
	name, data string
	ns, nm, rv string
	ok         bool
}{
	{"plain", `{"kind":"Pod","metadata":{"name":"a","namespace":"ns","resourceVersion":"7","labels":{"x":"y"}},"spec":{}}`, "ns", "a", "7", true},
	{"spaced", " {\n \"metadata\" :\t{ \"resourceVersion\" : \"8\" , \"name\" : \"b\" } } ", "", "b", "8", true},
	{"metadata twice merges", `{"metadata":{"name":"a","namespace":"ns"},"metadata":{"name":"b","resourceVersion":"3"}}`, "ns", "b", "3", true},
	{"last name wins", `{"metadata":{"name":"a","name":"c","resourceVersion":"1"}}`, "", "c", "1", true},
	{"deeper metadata ignored", `{"spec":{"metadata":{"name":"x"}},"metadata":{"name":"y","resourceVersion":"2"},"items":[{"metadata":{"name":"z"}}]}`, "", "y", "2", true},
	{"quotes and brackets in strings", `{"a":"}\"{[","metadata":{"annotations":{"k":"\"}]"},"name":"q","resourceVersion":"4"},"b":["]",{"c":"{"}]}`, "", "q", "4", true},
	{"scalars", `{"a":1.5e3,"b":true,"c":null,"metadata":{"generation":2,"name":"s","resourceVersion":"5"}}`, "", "s", "5", true},
	{"no metadata", `{"kind":"Pod"}`, "", "", "", true},
	{"items", `{"metadata":{"name":"a","resourceVersion":"1"},"items":null}`, "", "a", "1", true},
	{"Items", `{"Items":[],"metadata":{"name":"a","resourceVersion":"1"}}`, "", "a", "1", true},
	{"empty", `{}`, "", "", "", true},
	{"Metadata", `{"Metadata":{"name":"a"},"metadata":{"name":"b"}}`, "", "", "", false},
	{"Name", `{"metadata":{"Name":"a","name":"b"}}`, "", "", "", false},
	{"metadata null", `{"metadata":null}`, "", "", "", false},
	{"metadata a string", `{"metadata":"x"}`, "", "", "", false},
	{"escaped name", `{"metadata":{"name":"a\u0062"}}`, "", "", "", false},
	{"escaped key", `{"meta\u0064ata":{"name":"a"}}`, "", "", "", false},
	{"escaped key inside", `{"metadata":{"n\u0061me":"a"}}`, "", "", "", false},
	{"name a number", `{"metadata":{"name":5}}`, "", "", "", false},
	{"name null", `{"metadata":{"name":null}}`, "", "", "", false},
	{"name not UTF-8", "{\"metadata\":{\"name\":\"a\xff\"}}", "", "", "", false},
	{"name with a control character", "{\"metadata\":{\"name\":\"a\tb\"}}", "", "", "", false},
	{"cut", `{"metadata":{"name":"a"`, "", "", "", false},
	{"cut in a string", `{"metadata":{"name":"a`, "", "", "", false},
	{"an array", `[{"metadata":{"name":"a"}}]`, "", "", "", false},
	{"no colon", `{"metadata" {"name":"a"}}`, "", "", "", false},
	{"no comma", `{"a":1 "metadata":{"name":"a"}}`, "", "", "", false},
	{"cut in a skipped value", `{"a":{"b":[1,2`, "", "", "", false},
}

// TestIdentity: Identity reads what the item decoder sets, or
// refuses.
func TestIdentity(t *testing.T) {
	for _, c := range identityCases {
		ns, nm, rv, ok := Identity([]byte(c.data))
		if ok != c.ok || string(ns) != c.ns || string(nm) != c.nm || string(rv) != c.rv {
			t.Errorf("%s: Identity = %q %q %q %v, want %q %q %q %v", c.name, ns, nm, rv, ok, c.ns, c.nm, c.rv, c.ok)
		}
		if ok {
			agreesWithDecoder(t, c.name, []byte(c.data), ns, nm, rv)
		}
	}
}

// TestMapIdentity: MapIdentity reads what decoding into a map
// (an unstructured object) sets, or refuses; an item with two "metadata",
// which the map keeps the last of whole, is refused, and so is one with
// "items" (which a decoder choosing the type makes a list).
func TestMapIdentity(t *testing.T) {
	for _, c := range identityCases {
		want := c
		switch c.name {
		case "metadata twice merges", "items", "Items", "deeper metadata ignored":
			want.ns, want.nm, want.rv, want.ok = "", "", "", false
		}
		ns, nm, rv, ok := MapIdentity([]byte(c.data))
		if ok != want.ok || string(ns) != want.ns || string(nm) != want.nm || string(rv) != want.rv {
			t.Errorf("%s: MapIdentity = %q %q %q %v, want %q %q %q %v", c.name, ns, nm, rv, ok, want.ns, want.nm, want.rv, want.ok)
		}
		if ok {
			agreesWithMapDecoder(t, c.name, []byte(c.data), ns, nm, rv)
		}
	}
}

// agreesWithMapDecoder fails t if decoding data into a map, as the
// dynamic client does, sets another identity than ns, nm, rv.
func agreesWithMapDecoder(t *testing.T, name string, data, ns, nm, rv []byte) {
	t.Helper()
	m := map[string]any{}
	if utiljson.Unmarshal(data, &m) != nil {
		return
	}
	u := unstructured.Unstructured{Object: m}
	if u.GetNamespace() != string(ns) || u.GetName() != string(nm) || u.GetResourceVersion() != string(rv) {
		t.Errorf("%s: read %q %q %q, the map decoder sets %q %q %q", name, ns, nm, rv, u.GetNamespace(), u.GetName(), u.GetResourceVersion())
	}
}

// agreesWithDecoder fails t if the item decoder takes data and sets
// another identity than ns, nm, rv.
func agreesWithDecoder(t *testing.T, name string, data, ns, nm, rv []byte) {
	t.Helper()
	var p corev1.Pod
	if utiljson.Unmarshal(data, &p) != nil {
		return
	}
	if p.Namespace != string(ns) || p.Name != string(nm) || p.ResourceVersion != string(rv) {
		t.Errorf("%s: read %q %q %q, the decoder sets %q %q %q", name, ns, nm, rv, p.Namespace, p.Name, p.ResourceVersion)
	}
}

// FuzzIdentity: whatever the bytes, Identity and MapIdentity
// never panic, and what they read is what the typed decoder (the map
// decoder) sets wherever that takes them.
func FuzzIdentity(f *testing.F) {
	for _, c := range identityCases {
		f.Add([]byte(c.data))
	}
	for _, c := range typeCases {
		f.Add([]byte(c.data))
	}
	pod, err := json.Marshal(podgen.Pod(3, 30))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(pod)
	f.Fuzz(func(t *testing.T, data []byte) {
		if m, ok := Read(data); ok {
			agreesWithInterpret(t, "fuzzed", data, m)
		}
		if ns, nm, rv, ok := Identity(data); ok {
			agreesWithDecoder(t, "fuzzed", data, ns, nm, rv)
		}
		if ns, nm, rv, ok := MapIdentity(data); ok {
			agreesWithMapDecoder(t, "fuzzed", data, ns, nm, rv)
		}
	})
}

type withUnmarshalJSON struct {
	metav1.ObjectMeta `json:"metadata"`
}

func (*withUnmarshalJSON) UnmarshalJSON([]byte) error { return nil }

type inlineMeta struct {
	metav1.ObjectMeta `json:",inline"`
}

type customResource struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              json.RawMessage `json:"spec"`
}

// TestMetaType: only types whose ObjectMeta is their "metadata", and
// that decode without a method of their own, have their identity read.
func TestMetaType(t *testing.T) {
	for _, c := range []struct {
		v    any
		want bool
	}{
		{corev1.Pod{}, true}, {metav1.PartialObjectMetadata{}, true}, {customResource{}, true},
		{unstructured.Unstructured{}, false}, {withUnmarshalJSON{}, false}, {inlineMeta{}, false}, {"", false},
	} {
		if got := MetaType(reflect.TypeOf(c.v)); got != c.want {
			t.Errorf("MetaType(%T) = %v, want %v", c.v, got, c.want)
		}
	}
}
