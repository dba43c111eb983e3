package jsonmeta

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	serializerjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
)

// typeCases are objects with the apiVersion and kind Read must read (ok)
// or refuse to.
var typeCases = []struct {
	name, data       string
	apiVersion, kind string
	ok               bool
}{
	{"plain", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}`, "v1", "Pod", true},
	{"grouped", `{"kind":"Widget","apiVersion":"example.com/v1alpha1"}`, "example.com/v1alpha1", "Widget", true},
	{"last wins", `{"kind":"A","apiVersion":"v1","kind":"B"}`, "v1", "B", true},
	{"nested ones ignored", `{"spec":{"kind":"X","apiVersion":"y"},"kind":"Pod","items":[{"kind":"Z"}]}`, "", "Pod", true},
	{"none", `{"metadata":{}}`, "", "", true},
	{"Kind", `{"Kind":"A","kind":"B"}`, "", "", false},
	{"APIVERSION", `{"apiVersion":"v1","APIVERSION":"v2"}`, "", "", false},
	{"kelvin sign", "{\"\u212aind\":\"A\"}", "", "", false},
	{"kind a number", `{"kind":5}`, "", "", false},
	{"kind null", `{"kind":null}`, "", "", false},
	{"kind escaped", `{"kind":"P\u006fd"}`, "", "", false},
	{"apiVersion an object", `{"apiVersion":{"v":"1"}}`, "", "", false},
	{"space after", "{\"kind\":\"Pod\"} \n", "", "Pod", true},
	{"a second object after", `{"kind":"Pod"}{"kind":"Node"}`, "", "", false},
	{"a value after", `{"kind":"Pod"} 5`, "", "", false},
}

// TestReadTypeMeta: Read's apiVersion and kind are what the serializer's
// Interpret finds, or it refuses.
func TestReadTypeMeta(t *testing.T) {
	for _, c := range typeCases {
		m, ok := Read([]byte(c.data))
		if ok != c.ok || string(m.APIVersion) != c.apiVersion || string(m.Kind) != c.kind {
			t.Errorf("%s: Read = %q %q %v, want %q %q %v", c.name, m.APIVersion, m.Kind, ok, c.apiVersion, c.kind, c.ok)
		}
		if ok {
			agreesWithInterpret(t, c.name, []byte(c.data), m)
		}
	}
}

// agreesWithInterpret fails t if the serializer's Interpret takes data and
// finds another apiVersion or kind than m holds.
func agreesWithInterpret(t *testing.T, name string, data []byte, m Meta) {
	t.Helper()
	gvk, err := serializerjson.DefaultMetaFactory.Interpret(data)
	if err != nil {
		return
	}
	gv, err := schema.ParseGroupVersion(string(m.APIVersion))
	if err != nil {
		t.Errorf("%s: read apiVersion %q, which does not parse, where Interpret found %v", name, m.APIVersion, gvk)
		return
	}
	if gvk.Kind != string(m.Kind) || gvk.GroupVersion() != gv {
		t.Errorf("%s: read %q %q, Interpret finds %v", name, m.APIVersion, m.Kind, gvk)
	}
}
