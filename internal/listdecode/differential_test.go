package listdecode

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/kreflector/cache/internal/podgen"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
)

// equal is reflect.DeepEqual: Decode's objects are client-go's to the
// last nil map.
func equal(a, b runtime.Object) bool { return reflect.DeepEqual(a, b) }

var listMeta = metav1.ListMeta{ResourceVersion: "48213", Continue: "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ", RemainingItemCount: ptr.To[int64](12)}

// podList is n realistic Pods as kube-apiserver lists them.
func podList(n int) *corev1.PodList {
	l := &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, ListMeta: listMeta}
	for i := range n {
		l.Items = append(l.Items, *podgen.Pod(i, 1000+i))
	}
	return l
}

func jsonOf(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestPodsJSON(t *testing.T) {
	compare(t, Target{Typed: &corev1.PodList{}}, ctJSON, jsonOf(t, podList(40)))
}

func TestPodsProtobuf(t *testing.T) {
	compare(t, Target{Typed: &corev1.PodList{}}, ctProtobuf, protobufOf(t, podList(40), scheme.Scheme))
}

func TestPodsEmpty(t *testing.T) {
	for name, body := range map[string]string{
		"empty items":    `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[]}`,
		"null items":     `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":null}`,
		"no items":       `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7"}}`,
		"null item":      `{"kind":"PodList","apiVersion":"v1","items":[null, {"metadata":{"name":"a"}}]}`,
		"items first":    `{"items":[{"metadata":{"name":"a"}}],"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7"}}`,
		"spaces":         " \n{ \"kind\" : \"PodList\" , \"apiVersion\":\"v1\",\"items\" : [ {} , {\"metadata\":{\"name\":\"a\\\"b\"}} ] } \n",
		"no kind":        `{"apiVersion":"v1","items":[{"metadata":{"name":"a"}}]}`,
		"escaped key":    `{"kind":"PodList","apiVersion":"v1","\u0069tems":[{"metadata":{"name":"a"}}]}`,
		"Items":          `{"kind":"PodList","apiVersion":"v1","Items":[{"metadata":{"name":"a"}}]}`,
		"KIND":           `{"KIND":"PodList","apiversion":"v1","items":[{"metadata":{"name":"a"}}]}`,
		"unknown fields": `{"kind":"PodList","apiVersion":"v1","x":[1,{"y":"]"}],"items":[{"metadata":{"name":"a"},"z":{}}],"w":null}`,
	} {
		t.Run(name, func(t *testing.T) {
			compare(t, Target{Typed: &corev1.PodList{}}, ctJSON, []byte(body))
		})
	}
}

// configMaps covers maps: data, binaryData, empty and nil maps.
func configMaps() *corev1.ConfigMapList {
	l := &corev1.ConfigMapList{TypeMeta: metav1.TypeMeta{Kind: "ConfigMapList", APIVersion: "v1"}, ListMeta: listMeta}
	for i := range 30 {
		cm := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-" + strings.Repeat("x", i), Namespace: "ns", ResourceVersion: "5"}}
		switch i % 4 {
		case 0:
			cm.Data = map[string]string{"a": "1", "b": strings.Repeat("\"quoted\\", i)}
		case 1:
			cm.BinaryData = map[string][]byte{"bin": bytes.Repeat([]byte{0, 0xff, '"'}, i)}
		case 2:
			cm.Immutable = ptr.To(true)
		}
		l.Items = append(l.Items, cm)
	}
	return l
}

func TestConfigMaps(t *testing.T) {
	tgt := Target{Typed: &corev1.ConfigMapList{}}
	t.Run("json", func(t *testing.T) { compare(t, tgt, ctJSON, jsonOf(t, configMaps())) })
	t.Run("protobuf", func(t *testing.T) { compare(t, tgt, ctProtobuf, protobufOf(t, configMaps(), scheme.Scheme)) })
	t.Run("empty maps", func(t *testing.T) {
		compare(t, tgt, ctJSON, []byte(`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[`+
			`{"metadata":{"name":"a","labels":{}},"data":{},"binaryData":{}},{"metadata":{"name":"b"},"data":null},`+
			`{"metadata":{"name":"c"},"binaryData":{"k":"AAEC"}}]}`))
	})
}

// crList is a custom resource list as the dynamic client gets it.
const crList = `{"apiVersion":"example.com/v1","kind":"WidgetList","metadata":{"resourceVersion":"99","continue":"c"},"items":[
 {"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"a","namespace":"n"},"spec":{"n":1,"f":1.5,"e":1e3,"neg":-0,"big":12345678901234567890,"l":[[1,2],[],{"x":null}],"s":"\u00e9\n"}},
 {"metadata":{"name":"b"},"spec":{"replicas":3,"z":0.0}},
 {"kind":"Other","metadata":{"name":"c"}},
 {"kind":5,"metadata":{"name":"d"}},
 null,
 {}
]}`

func TestUnstructured(t *testing.T) {
	tgt := Target{Unstructured: true}
	compare(t, tgt, ctJSON, []byte(crList))
	for name, body := range map[string]string{
		"items first": `{"items":[{"metadata":{"name":"a"}}],"kind":"WidgetList","apiVersion":"example.com/v1"}`,
		"no kind":     `{"apiVersion":"example.com/v1","items":[{"metadata":{"name":"a"}}]}`,
		"pods":        string(jsonOf(t, podList(5))),
		"null items":  `{"kind":"WidgetList","apiVersion":"example.com/v1","items":null}`,
		"status":      `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Gone","code":410}`,
	} {
		t.Run(name, func(t *testing.T) { compare(t, tgt, ctJSON, []byte(body)) })
	}
}

// partials is a PartialObjectMetadataList as kube-apiserver sends it.
func partials() *metav1.PartialObjectMetadataList {
	l := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadataList", APIVersion: "meta.k8s.io/v1"}, ListMeta: listMeta}
	for i := range 40 {
		p := podgen.Pod(i, 1000+i)
		l.Items = append(l.Items, metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"}, ObjectMeta: p.ObjectMeta})
	}
	return l
}

func TestMetadata(t *testing.T) {
	tgt := Target{Metadata: true}
	t.Run("json", func(t *testing.T) { compare(t, tgt, ctJSON, jsonOf(t, partials())) })
	t.Run("protobuf", func(t *testing.T) { compare(t, tgt, ctProtobuf, protobufOf(t, partials(), metaScheme)) })
	t.Run("a PodList", func(t *testing.T) { compare(t, tgt, ctJSON, jsonOf(t, podList(3))) })
}

// TestExpectedItemsAreNotCopied: a page whose items fill at least half
// of Options.Expect becomes Items as decoded (its capacity tells: Expect,
// not the count); one with fewer (a short last page) or more items than
// expected is assembled as without Expect. All are client-go's list.
func TestExpectedItemsAreNotCopied(t *testing.T) {
	list := podList(40)
	for ct, body := range map[string][]byte{ctJSON: jsonOf(t, list), ctProtobuf: protobufOf(t, list, scheme.Scheme)} {
		want, wantErr := clientGo(t, Target{Typed: &corev1.PodList{}}, ct, body)
		for _, c := range []struct{ expect, capacity int }{{40, 40}, {80, 80}, {81, 40}, {500, 40}, {7, 40}, {maxExpect + 1, 40}} {
			for _, workers := range []int{1, 2} {
				got, err := Decode(context.Background(), bytes.NewReader(body), Target{Typed: &corev1.PodList{}}, Options{Workers: workers, Expect: c.expect})
				same(t, fmt.Sprintf("%s, Expect %d, workers %d", ct, c.expect, workers), got, err, want, wantErr)
				if n := cap(got.(*corev1.PodList).Items); n != c.capacity {
					t.Errorf("%s, Expect %d, workers %d: Items of capacity %d, want %d", ct, c.expect, workers, n, c.capacity)
				}
			}
		}
	}
}

// TestManyItemsCopiedAtOnce: a list past parallelCopy items, in more than
// one chunk, is assembled by the workers at once into client-go's list.
func TestManyItemsCopiedAtOnce(t *testing.T) {
	list := &corev1.ConfigMapList{TypeMeta: metav1.TypeMeta{Kind: "ConfigMapList", APIVersion: "v1"}, ListMeta: listMeta}
	for i := range parallelCopy + 1000 {
		list.Items = append(list.Items, corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("cm-", i), Namespace: "ns"},
			Data: map[string]string{"i": fmt.Sprint(i)}})
	}
	for ct, body := range map[string][]byte{ctJSON: jsonOf(t, list), ctProtobuf: protobufOf(t, list, scheme.Scheme)} {
		want, wantErr := clientGo(t, Target{Typed: &corev1.ConfigMapList{}}, ct, body)
		for _, workers := range []int{1, 2, 3} {
			got, err := Decode(context.Background(), bytes.NewReader(body), Target{Typed: &corev1.ConfigMapList{}}, Options{Workers: workers})
			same(t, fmt.Sprintf("%s, workers %d", ct, workers), got, err, want, wantErr)
		}
	}
}
