package lean

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kreflector/cache/internal/podgen"
	"github.com/kreflector/cache/internal/repr"
)

// Sharing changes no value: the object is deeply equal to what it was
// and encodes to the same bytes.
func TestShareKeepsEveryValue(t *testing.T) {
	for _, obj := range []interface{}{decodedPod(t, 3), decodedPod(t, 4), decodedUnstructuredPod(t, 5)} {
		before := deepCopyOf(t, obj)
		wantJSON, _ := json.Marshal(before)
		NewTable(true, false).Share(obj)
		if !reflect.DeepEqual(obj, before) {
			t.Errorf("%T changed by sharing", obj)
		}
		if got, _ := json.Marshal(obj); !bytes.Equal(got, wantJSON) {
			t.Errorf("%T encodes differently after sharing", obj)
		}
	}
}

func deepCopyOf(t *testing.T, obj interface{}) interface{} {
	switch o := obj.(type) {
	case *corev1.Pod:
		return o.DeepCopy()
	case *unstructured.Unstructured:
		return o.DeepCopy()
	}
	t.Fatalf("no deep copy for %T", obj)
	return nil
}

// Equal strings and byte slices of two typed Pods end up in one copy:
// label keys and values, images, node names, managedFields' field sets,
// resource names; each Pod's own name, uid and container IDs are not
// looked up at all.
func TestShareSharesEqualValues(t *testing.T) {
	// Pods 0 and 1 are in one ReplicaSet; 0 and podgen.Nodes on one node.
	a, b, c := decodedPod(t, 0), decodedPod(t, 1), decodedPod(t, podgen.Nodes)
	tab := NewTable(true, false)
	for _, p := range []*corev1.Pod{a, b, c} {
		tab.Share(p)
	}
	checks := map[string]bool{
		"label value": sameString(a.Labels["app.kubernetes.io/name"], b.Labels["app.kubernetes.io/name"]),
		"label key":   sameString(mapKey(a.Labels, "pod-template-hash"), mapKey(b.Labels, "pod-template-hash")),
		"image":       sameString(a.Spec.Containers[0].Image, b.Spec.Containers[0].Image),
		"node name":   sameString(a.Spec.NodeName, c.Spec.NodeName),
		"owner name":  sameString(a.OwnerReferences[0].Name, b.OwnerReferences[0].Name),
		"env value":   sameString(a.Spec.Containers[0].Env[0].Value, c.Spec.Containers[0].Env[0].Value),
		"fieldsV1":    unsafe.SliceData(a.ManagedFields[0].FieldsV1.Raw) == unsafe.SliceData(b.ManagedFields[0].FieldsV1.Raw),
		"resource name key": sameString(
			string(resourceKey(a.Spec.Containers[0].Resources.Requests, "cpu")),
			string(resourceKey(c.Spec.Containers[0].Resources.Requests, "cpu"))),
	}
	for what, shared := range checks {
		if !shared {
			t.Errorf("%s: not shared", what)
		}
	}
	if sameString(a.Name, b.Name) || a.Name == b.Name {
		t.Error("the Pods' names are one string")
	}
	for _, own := range []string{a.Name, string(a.UID), a.Status.ContainerStatuses[0].ContainerID} {
		if _, held := tab.stripes[0].cur[own]; held || own == "" {
			t.Errorf("a Pod's own value %q is in the table", own)
		}
	}
}

func resourceKey(l corev1.ResourceList, name corev1.ResourceName) corev1.ResourceName {
	for k := range l {
		if k == name {
			return k
		}
	}
	return ""
}

// The same for unstructured Pods: strings, keys and numbers are shared
// boxed values; the own name is left alone.
func TestShareUnstructured(t *testing.T) {
	a, b := decodedUnstructuredPod(t, 0), decodedUnstructuredPod(t, 1)
	tab := NewTable(true, false)
	tab.Share(a)
	tab.Share(b)
	label := func(u *unstructured.Unstructured) interface{} {
		return u.Object["metadata"].(map[string]interface{})["labels"].(map[string]interface{})["app.kubernetes.io/name"]
	}
	port := func(u *unstructured.Unstructured) interface{} {
		c := u.Object["spec"].(map[string]interface{})["containers"].([]interface{})[0].(map[string]interface{})
		return c["ports"].([]interface{})[0].(map[string]interface{})["containerPort"]
	}
	if !repr.Same(label(a), label(b)) {
		t.Error("label value: not one boxed string")
	}
	if !repr.Same(port(a), port(b)) {
		t.Error("container port: not one boxed number")
	}
	if !sameString(mapKey(a.Object, "spec"), mapKey(b.Object, "spec")) {
		t.Error("top-level key: not shared")
	}
	if sameString(a.GetName(), b.GetName()) {
		t.Error("own names shared")
	}
}

// Plans follow types that refer to each other: a string reached only
// through a pointer back to the type being planned is shared too.
type cycA struct {
	B *cycB
	S string
}

type cycB struct{ A *cycA }

func TestSharePlansRecursiveTypes(t *testing.T) {
	deep := func() *cycB {
		return &cycB{A: &cycA{B: &cycB{A: &cycA{S: strings.Repeat("v", 40)}}}}
	}
	b1, b2 := deep(), deep()
	tab := NewTable(true, false)
	tab.Share(b1)
	tab.Share(b2)
	if !sameString(b1.A.B.A.S, b2.A.B.A.S) {
		t.Error("a string reached through the cycle of types was not shared")
	}
}

// A value that refers to itself, many times over, ends the walk.
type selfRef struct {
	Next *selfRef
	L    []*selfRef
	M    map[string]*selfRef
	S    string
}

func TestShareStopsOnSelfReference(t *testing.T) {
	l := &selfRef{S: "x"}
	l.Next, l.L, l.M = l, []*selfRef{l, l}, map[string]*selfRef{"k": l}
	NewTable(true, false).Share(l)
}

// The table's generations: a value met in every generation keeps its
// canonical copy; one not met for two generations is forgotten and comes
// back as a new copy; a sync makes a generation span the objects it had.
func TestShareTableGenerations(t *testing.T) {
	type pair struct {
		Kept, Own string
		M         map[string]string
	}
	own := func(i int) *pair {
		v := "own-" + strconv.Itoa(i)
		return &pair{Kept: strings.Clone("kept-value"), Own: v, M: map[string]string{"k": strings.Clone(v)}}
	}
	tab := NewTable(true, true)
	first := own(0)
	tab.Share(first)
	for i := 1; i <= 2*MinSpan; i++ {
		tab.Share(own(i))
	}
	again := own(0)
	tab.Share(again)
	if !sameString(again.Kept, first.Kept) {
		t.Error("a value met in every generation got a new canonical copy")
	}
	if sameString(again.Own, first.Own) || sameMapOf(again.M, first.M) {
		t.Error("a value or map not met for two generations was still held")
	}
	// Per object: its own string and its own map; "kept-value" and "k"
	// once per generation.
	if n, bound := tab.Size(), 2*(2*MinSpan+2); n > bound {
		t.Errorf("the table holds %d values and maps, more than two generations' %d", n, bound)
	}
	tab.Synced(5 * MinSpan)
	if tab.span.Load() != 5*MinSpan {
		t.Errorf("a sync of %d objects left the span at %d", 5*MinSpan, tab.span.Load())
	}
}

// BenchmarkShareObject is the cost of sharing one realistic Pod through
// a table that has seen its ReplicaSet's siblings: the CPU that
// ShareStrings (and ShareMaps) add per object on the LIST and watch paths.
// Each Pod is decoded from bytes just before it is shared, as a watch
// event's is (so it is in the CPU's caches as such an object is); the
// "none" cases decode alone, so sharing costs a case's time less its
// encoding's "none" time, and the ratio of the two is what sharing adds
// to a program's cost per event (before the informer's few µs).
//
//	go test -run '^$' -bench BenchmarkShareObject -benchmem -count 6 ./internal/lean
func BenchmarkShareObject(b *testing.B) {
	for _, enc := range []string{"json", "protobuf"} {
		b.Run(enc+"/none", func(b *testing.B) { benchShareObject(b, enc, nil) })
		b.Run(enc+"/strings", func(b *testing.B) { benchShareObject(b, enc, NewTable(true, false)) })
		b.Run(enc+"/strings+maps", func(b *testing.B) { benchShareObject(b, enc, NewTable(true, true)) })
	}
}

func benchShareObject(b *testing.B, encoding string, tab *Table) {
	const pool = 4 * podgen.PerReplicaSet * 64
	enc, dec := memCodec(encoding)
	raw := make([][]byte, pool)
	for i := range raw {
		var buf bytes.Buffer
		if err := enc.Encode(realisticPod(i, i+1), &buf); err != nil {
			b.Fatal(err)
		}
		raw[i] = buf.Bytes()
		if tab != nil {
			tab.Share(decodedPod(b, i))
		}
	}
	for i := 0; b.Loop(); i++ {
		obj, _, err := dec.Decode(raw[i%pool], nil, &corev1.Pod{})
		if err != nil {
			b.Fatal(err)
		}
		if tab != nil {
			tab.Share(obj)
		}
	}
}
