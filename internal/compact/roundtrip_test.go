package compact

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kreflector/cache/internal/podgen"
)

// decodeWire decodes b as a client does, with the decoder a typed client
// negotiates for encoding.
func decodeWire(t testing.TB, encoding string, b []byte) (runtime.Object, error) {
	t.Helper()
	_, dec := podgen.Codec(encoding)
	return runtime.Decode(dec, b)
}

// wire is p as the server sends it in encoding.
func wire(t testing.TB, encoding string, p *corev1.Pod) []byte {
	t.Helper()
	p.APIVersion, p.Kind = "v1", "Pod"
	enc, _ := podgen.Codec(encoding)
	b, err := runtime.Encode(enc, p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// roundTrip packs obj as the compact store does and reads it back.
func roundTrip(t testing.TB, s *Squeezer, obj any) any {
	t.Helper()
	c := For(obj)
	if c == nil {
		t.Fatalf("no codec for %T", obj)
	}
	b, err := c.Encode(nil, obj)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := s.Expand(nil, s.Squeeze(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Decode(plain)
	if err != nil {
		t.Fatalf("a record that encoded does not decode: %v", err)
	}
	return out
}

func TestProtobufPodsComeBackDeepEqual(t *testing.T) {
	s := NewSqueezer()
	for i := range trainSamples + 50 { // across the dictionary's training
		obj, err := decodeWire(t, "protobuf", wire(t, "protobuf", podgen.Pod(i, 1000+i)))
		if err != nil {
			t.Fatal(err)
		}
		if got := roundTrip(t, s, obj); !reflect.DeepEqual(got, obj) {
			t.Fatalf("pod %d: differs after the round trip", i)
		}
	}
	if !s.Trained() {
		t.Fatal("no dictionary after the training samples")
	}
}

func TestJSONPodsComeBackSemanticallyEqual(t *testing.T) {
	s := NewSqueezer()
	for i := range 20 {
		obj, err := decodeWire(t, "json", wire(t, "json", podgen.Pod(i, 1000+i)))
		if err != nil {
			t.Fatal(err)
		}
		if got := roundTrip(t, s, obj); !equality.Semantic.DeepEqual(got, obj) {
			t.Fatalf("pod %d: differs after the round trip", i)
		}
	}
	// What protobuf cannot say: an explicitly empty list comes back nil.
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Finalizers: []string{}}}
	got := roundTrip(t, s, p).(*corev1.Pod)
	if got.Finalizers != nil || !equality.Semantic.DeepEqual(got, p) {
		t.Fatalf("empty finalizers: got %#v", got.Finalizers)
	}
}

func TestTypeMetaIsKept(t *testing.T) {
	p := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	if got := roundTrip(t, NewSqueezer(), p); !reflect.DeepEqual(got, p) {
		t.Fatalf("got %#v", got)
	}
}

func TestMetadataOnlyComesBackDeepEqual(t *testing.T) {
	pod := podgen.Pod(3, 77)
	m := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}, ObjectMeta: pod.ObjectMeta}
	var back metav1.PartialObjectMetadata
	if err := back.Unmarshal(mustMarshal(t, m)); err != nil {
		t.Fatal(err)
	}
	back.TypeMeta = m.TypeMeta
	if got := roundTrip(t, NewSqueezer(), &back); !reflect.DeepEqual(got, &back) {
		t.Fatal("metadata differs after the round trip")
	}
}

func mustMarshal(t testing.TB, m interface{ Marshal() ([]byte, error) }) []byte {
	t.Helper()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestUnstructuredComesBackDeepEqual(t *testing.T) {
	s := NewSqueezer()
	for i := range 20 {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(wire(t, "json", podgen.Pod(i, 5+i))); err != nil {
			t.Fatal(err)
		}
		u.Object["extra"] = map[string]any{"f": 1.5, "i": int64(-3), "n": nil, "b": true, "e": []any{}, "m": map[string]any{}}
		if got := roundTrip(t, s, u); !reflect.DeepEqual(got, u) {
			t.Fatalf("object %d differs after the round trip:\n%v\n%v", i, got, u)
		}
	}
}

func TestNoCodecForOtherTypes(t *testing.T) {
	type mine struct{ metav1.ObjectMeta }
	for _, obj := range []any{&mine{}, corev1.Pod{}, "a string", nil, &unstructured.UnstructuredList{}} {
		if c := For(obj); c != nil {
			t.Errorf("%T has a codec", obj)
		}
	}
}

func TestCorruptRecordsFail(t *testing.T) {
	s := NewSqueezer()
	c := For(&corev1.Pod{})
	b, _ := c.Encode(nil, podgen.Pod(1, 1))
	rec := s.Squeeze(b)
	for _, bad := range [][]byte{nil, {9}, {formDict, 1, 2}, append([]byte{formS2}, rec[1:len(rec)/2]...)} {
		if _, err := s.Expand(nil, bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Expand(%x...): %v, want ErrCorrupt", bad[:min(len(bad), 4)], err)
		}
	}
	for _, bad := range [][]byte{nil, {200}, append([]byte{0, 0}, 0xff)} {
		if _, err := c.Decode(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Decode(%x): %v, want ErrCorrupt", bad, err)
		}
	}
	if _, err := c.Encode(nil, &corev1.ConfigMap{}); err == nil {
		t.Error("encoding a ConfigMap with a Pod's codec did not fail")
	}
}

func TestSqueezeShrinksPods(t *testing.T) {
	s := NewSqueezer()
	c := For(&corev1.Pod{})
	var plain, squeezed int
	for i := range 2 * trainSamples {
		b, _ := c.Encode(nil, podgen.Pod(i, i+1))
		r := s.Squeeze(b)
		if i >= trainSamples {
			plain, squeezed = plain+len(b), squeezed+len(r)
		}
		if back, err := s.Expand(nil, r); err != nil || !bytes.Equal(back, b) {
			t.Fatalf("pod %d does not come back: %v", i, err)
		}
	}
	// Measured: about 4.1 KB to 1.2 KB with the dictionary.
	if squeezed*3 > plain {
		t.Fatalf("squeezed %d of %d bytes: less than 3x", squeezed, plain)
	}
}

// TestExpandNeverLendsTheRecord expands a record kept as it came
// (incompressible bytes) and checks the result is memory of its own: the
// caller reuses it as room to expand other records into.
func TestExpandNeverLendsTheRecord(t *testing.T) {
	s := NewSqueezer()
	src := make([]byte, 512)
	x := uint64(88172645463325252)
	for i := range src {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		src[i] = byte(x)
	}
	rec := s.Squeeze(src)
	if rec[0] != formRaw {
		t.Fatalf("the bytes compressed (form %d): the test needs a raw record", rec[0])
	}
	out, err := s.Expand(nil, rec)
	if err != nil {
		t.Fatal(err)
	}
	out[0] ^= 0xff
	if rec[1] != src[0] {
		t.Fatal("writing to Expand's result changed the record")
	}
}
