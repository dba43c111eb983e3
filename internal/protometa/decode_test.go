package protometa

import (
	"encoding/binary"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kreflector/cache/internal/podgen"
)

var podDecoder = For(reflect.TypeOf(corev1.Pod{}))

// generated is what the generated Unmarshal makes of data, managedFields
// then dropped: what a caller of Decoder expects.
func generated(data []byte) (*corev1.Pod, error) {
	var p corev1.Pod
	err := p.Unmarshal(data)
	p.ManagedFields = nil
	return &p, err
}

// ours is what the Decoder makes of data, managedFields then dropped (they
// are there only when it gave the bytes to the generated code whole).
func ours(data []byte) (*corev1.Pod, error) {
	var p corev1.Pod
	err := podDecoder.Unmarshal(data, reflect.ValueOf(&p).Elem())
	p.ManagedFields = nil
	return &p, err
}

// same fails t unless the Decoder and the generated code agree on data:
// the same error, or deep-equal objects.
func same(t *testing.T, data []byte) {
	t.Helper()
	want, wantErr := generated(data)
	got, err := ours(data)
	if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
		t.Fatalf("error %v; the generated code's is %v", err, wantErr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded\n%#v\nthe generated code decodes\n%#v", got, want)
	}
}

func marshal(t testing.TB, m interface{ Marshal() ([]byte, error) }) []byte {
	t.Helper()
	data, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestPodsDecodeWithoutTheirManagedFields(t *testing.T) {
	for i := 0; i < 50; i++ {
		p := podgen.Pod(i, 100+i)
		if len(p.ManagedFields) == 0 {
			t.Fatal("podgen's Pods have managedFields; the test needs them")
		}
		data := marshal(t, p)
		same(t, data)
		var got corev1.Pod
		got.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kept"}}
		if err := podDecoder.Unmarshal(data, reflect.ValueOf(&got).Elem()); err != nil {
			t.Fatal(err)
		}
		if len(got.ManagedFields) != 1 || got.ManagedFields[0].Manager != "kept" {
			t.Fatalf("ManagedFields = %v; want them left as they were", got.ManagedFields)
		}
	}
}

// metaField1 wraps meta's bytes as the field of an object's metadata.
func metaField1(meta []byte) []byte {
	return append(append([]byte{metaField<<3 | wireBytes}, uvarint(len(meta))...), meta...)
}

func uvarint(n int) []byte { return binary.AppendUvarint(nil, uint64(n)) }

// Metadata in several fields, entries among its other fields, fields
// before and after it: all merge as the generated code merges them.
func TestMetadataInPiecesMerges(t *testing.T) {
	p := podgen.Pod(3, 7)
	full := marshal(t, p)
	spec := marshal(t, &corev1.Pod{Spec: p.Spec})
	labels := marshal(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"extra": "yes", "app": "other"}}})
	entry := marshal(t, &metav1.ObjectMeta{ManagedFields: p.ManagedFields[:1]})
	var data []byte
	data = append(data, spec...)
	data = append(data, full...)
	data = append(data, labels...) // a whole Pod's fields: its metadata's name is ""
	data = append(data, metaField1(append(append([]byte{}, entry...), marshal(t, &metav1.ObjectMeta{Name: "renamed"})...))...)
	same(t, data)
	got, _ := ours(data)
	if got.Name != "renamed" || got.Labels["extra"] != "yes" || len(got.Spec.Containers) != 2*len(p.Spec.Containers) {
		t.Fatalf("the pieces were not merged: name %q, labels %v, %d containers", got.Name, got.Labels, len(got.Spec.Containers))
	}
}

// badEntries are managedFields entries the generated code refuses, or
// reads only through its own skipping.
var badEntries = map[string][]byte{
	"manager as a varint":          {1<<3 | wireVarint, 5},
	"time as a varint":             {4<<3 | wireVarint, 5},
	"seconds as bytes":             {4<<3 | wireBytes, 3, 1<<3 | wireBytes, 1, 'x'},
	"fieldsV1 raw as a varint":     {7<<3 | wireBytes, 2, 1<<3 | wireVarint, 1},
	"truncated string":             {1<<3 | wireBytes, 9, 'x'},
	"field 0":                      {0, 1},
	"end group":                    {9<<3 | 4},
	"unknown group":                {9<<3 | 3, 9<<3 | 4},
	"unknown fixed64 past the end": {9<<3 | wireFixed64, 1, 2},
	"overlong varint":              {1<<3 | wireVarint, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 1},
}

func TestRefusedEntriesGiveTheGeneratedError(t *testing.T) {
	name := marshal(t, &metav1.ObjectMeta{Name: "x"})
	for what, raw := range badEntries {
		t.Run(what, func(t *testing.T) {
			meta := append(append([]byte{}, name...), managedFields<<3|wireBytes)
			meta = append(append(meta, uvarint(len(raw))...), raw...)
			same(t, metaField1(meta))
			same(t, append(metaField1(meta), marshal(t, &corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}})...))
		})
	}
}

// An object whose bytes fail elsewhere than in its entries fails with the
// generated code's error, whether or not they came before.
func TestOtherFailuresGiveTheGeneratedError(t *testing.T) {
	good := marshal(t, podgen.Pod(1, 1))
	for what, data := range map[string][]byte{
		"truncated":             good[:len(good)-3],
		"spec as a varint":      append(append([]byte{}, good...), 2<<3|wireVarint, 1),
		"metadata as a varint":  append([]byte{1<<3 | wireVarint, 1}, good...),
		"bad label in metadata": append(append([]byte{}, good...), metaField1([]byte{11<<3 | wireVarint, 1})...),
		"empty":                 {},
	} {
		t.Run(what, func(t *testing.T) { same(t, data) })
	}
}

func TestForTypesWithObjectMetaFirst(t *testing.T) {
	for _, c := range []struct {
		v    interface{}
		want bool
	}{
		{corev1.Pod{}, true},
		{corev1.ConfigMap{}, true},
		{metav1.PartialObjectMetadata{}, true},
		{corev1.PodList{}, false},
		{unstructured.Unstructured{}, false},
		{metav1.ObjectMeta{}, false},
		{outsider{}, false}, // its package's Unmarshal might not merge
	} {
		if got := For(reflect.TypeOf(c.v)) != nil; got != c.want {
			t.Errorf("For(%T) != nil is %v, want %v", c.v, got, c.want)
		}
	}
}

func TestLeavingOutAllocatesLess(t *testing.T) {
	data := marshal(t, podgen.Pod(5, 5))
	gen := testing.AllocsPerRun(50, func() { _, _ = generated(data) })
	got := testing.AllocsPerRun(50, func() { _, _ = ours(data) })
	if got >= gen-float64(len(podgen.Pod(5, 5).ManagedFields)) {
		t.Fatalf("%v allocations a Pod, %v with its managedFields", got, gen)
	}
}

func FuzzAgainstGenerated(f *testing.F) {
	f.Add(marshal(f, podgen.Pod(2, 2)))
	for _, raw := range badEntries {
		f.Add(metaField1(append([]byte{managedFields<<3 | wireBytes}, append(uvarint(len(raw)), raw...)...)))
	}
	f.Fuzz(func(t *testing.T, data []byte) { same(t, data) })
}

// outsider is a type with ObjectMeta first and an Unmarshal, outside
// Kubernetes' own API packages.
type outsider struct {
	metav1.ObjectMeta `protobuf:"bytes,1,opt,name=metadata"`
}

func (o *outsider) Unmarshal(data []byte) error { return o.ObjectMeta.Unmarshal(data) }
