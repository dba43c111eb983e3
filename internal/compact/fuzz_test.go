package compact

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kreflector/cache/internal/podgen"
)

// FuzzRoundTrip: whatever bytes client-go's protobuf decoder turns into a
// Pod, and whatever JSON its unstructured decoder accepts, come back
// reflect.DeepEqual from a record.
func FuzzRoundTrip(f *testing.F) {
	for i := range 3 {
		f.Add(wire(f, "protobuf", podgen.Pod(i, 10+i)), false)
		f.Add(wire(f, "json", podgen.Pod(i, 10+i)), true)
	}
	f.Add([]byte(`{"apiVersion":"x/v1","kind":"K","metadata":{"name":"a"},"n":[1,2.5,-0,1e300,null,{}],"big":18446744073709551615}`), true)
	s := NewSqueezer()
	f.Fuzz(func(t *testing.T, b []byte, unstructuredJSON bool) {
		var obj any
		if unstructuredJSON {
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(b); err != nil {
				return
			}
			obj = u
		} else {
			o, err := decodeWire(t, "protobuf", b)
			if err != nil || For(o) == nil {
				return
			}
			obj = o
		}
		if got := roundTrip(t, s, obj); !reflect.DeepEqual(got, obj) {
			t.Fatalf("differs after the round trip:\n%#v\n%#v", got, obj)
		}
	})
}
