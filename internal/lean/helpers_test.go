package lean

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/kreflector/cache/internal/podgen"
)

// The fixtures of these tests are podgen's realistic Pods.
var (
	realisticPod = podgen.Pod
	decodedFrom  = podgen.Decoded
	changedPod   = podgen.Changed
	checkAdopted = podgen.CheckAdopted
	memCodec     = podgen.Codec
)

// decodedPod is realisticPod i as a client decodes it: from JSON bytes,
// every string its own (see decodedFrom).
func decodedPod(t testing.TB, i int) *corev1.Pod {
	t.Helper()
	return decodedFrom(t, realisticPod(i, i+1))
}

func decodedUnstructuredPod(t testing.TB, i int) *unstructured.Unstructured {
	t.Helper()
	b, err := json.Marshal(realisticPod(i, i+1))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(append([]byte(`{"apiVersion":"v1","kind":"Pod",`), b[1:]...)); err != nil {
		t.Fatal(err)
	}
	return u
}

func sameString(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// encoded is obj's bytes in enc.
func encoded(b *testing.B, enc apiruntime.Encoder, obj apiruntime.Object) []byte {
	var buf bytes.Buffer
	if err := enc.Encode(obj, &buf); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// mapKey returns m's key equal to k, as stored.
func mapKey[V any](m map[string]V, k string) string {
	for key := range m {
		if key == k {
			return key
		}
	}
	return ""
}

// sameMapOf says whether a and b, maps of any one type, are one map.
func sameMapOf(a, b any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}
