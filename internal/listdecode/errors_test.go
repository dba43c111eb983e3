package listdecode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
)

// smallPods is a short PodList, for cutting at every byte.
const smallPods = `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"10"},"items":[` +
	`{"metadata":{"name":"a","namespace":"n","labels":{"x":"y"}},"spec":{"containers":[{"name":"c","image":"i","resources":{"limits":{"cpu":"1"}}}]}},` +
	`{"metadata":{"name":"b\"\\","creationTimestamp":"2024-01-02T03:04:05Z"},"status":{"phase":"Running"}}]}`

// against compares Decode with client-go on body at 1 and 2 workers,
// read whole.
func against(t *testing.T, tgt Target, body []byte) {
	t.Helper()
	want, wantErr := clientGo(t, tgt, contentTypeOf(body), body)
	for _, w := range []int{1, 2} {
		got, err := Decode(context.Background(), bytes.NewReader(body), tgt, Options{Workers: w})
		same(t, fmt.Sprintf("workers %d", w), got, err, want, wantErr)
	}
}

// contentTypeOf is the Content-Type kube-apiserver would send body with,
// as Decode sniffs it.
func contentTypeOf(body []byte) string {
	switch {
	case bytes.HasPrefix(body, protobufMagic):
		return ctProtobuf
	case bytes.HasPrefix(body, cborMagic):
		return mediaCBOR
	}
	return ctJSON
}

func TestTruncatedJSON(t *testing.T) {
	for _, tgt := range []Target{{Typed: &corev1.PodList{}}, {Unstructured: true}} {
		for n := range len(smallPods) {
			t.Run(fmt.Sprint(n), func(t *testing.T) { against(t, tgt, []byte(smallPods[:n])) })
		}
	}
}

func TestTruncatedProtobuf(t *testing.T) {
	body := protobufOf(t, podList(2), scheme.Scheme)
	for n := range len(body) {
		t.Run(fmt.Sprint(n), func(t *testing.T) { against(t, Target{Typed: &corev1.PodList{}}, body[:n]) })
	}
	body = protobufOf(t, partials(), metaScheme)
	for n := 0; n < len(body); n += 61 {
		t.Run(fmt.Sprint("metadata ", n), func(t *testing.T) { against(t, Target{Metadata: true}, body[:n]) })
	}
}

func TestMalformed(t *testing.T) {
	item := func(s string) string {
		return `{"kind":"PodList","apiVersion":"v1","items":[{"metadata":{"name":"a"}},` + s + `,{"metadata":{"name":"c"}}]}`
	}
	for name, body := range map[string]string{
		"syntax in item":         item(`{"metadata":{"name":"b",}}`),
		"type in item":           item(`{"metadata":{"name":5}}`),
		"quantity":               item(`{"spec":{"containers":[{"resources":{"limits":{"cpu":"lots"}}}]}}`),
		"time":                   item(`{"metadata":{"creationTimestamp":"yesterday"}}`),
		"type then hard":         `{"kind":"PodList","apiVersion":"v1","items":[{"metadata":{"name":5}},{"metadata":{"creationTimestamp":"x"}}]}`,
		"type then syntax":       `{"kind":"PodList","apiVersion":"v1","items":[{"metadata":{"name":5}},{"metadata":{"name":"b"}]}`,
		"scalar item":            item(`42`),
		"string item":            item(`"pod"`),
		"missing comma":          item(`{} {}`),
		"trailing comma":         `{"kind":"PodList","apiVersion":"v1","items":[{},]}`,
		"garbage after":          `{"kind":"PodList","apiVersion":"v1","items":[]} x`,
		"bad metadata":           `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":5},"items":[{}]}`,
		"items a number":         `{"kind":"PodList","apiVersion":"v1","items":5}`,
		"kind a number":          `{"kind":5,"apiVersion":"v1","items":[{}]}`,
		"wrong version":          `{"kind":"PodList","apiVersion":"v2","items":[{}]}`,
		"failure status":         `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"gone","reason":"Expired","code":410}`,
		"success status":         `{"kind":"Status","apiVersion":"v1","status":"Success"}`,
		"status then items":      `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"items":[{"x":1}]}`,
		"a pod":                  `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a"}}`,
		"another list":           `{"kind":"ConfigMapList","apiVersion":"v1","items":[{"data":{"a":"b"}}]}`,
		"not an object":          `[1,2]`,
		"yaml":                   "kind: PodList\napiVersion: v1\nitems: []\n",
		"empty":                  ``,
		"deep":                   item(strings.Repeat("[", 10001) + strings.Repeat("]", 10001)),
		"deep in range":          item(strings.Repeat("[", 9990) + strings.Repeat("]", 9990)),
		"control char in string": item("{\"metadata\":{\"name\":\"a\x01\"}}"),
		"cbor":                   "\xd9\xd9\xf7\xa0",
	} {
		t.Run(name, func(t *testing.T) { against(t, Target{Typed: &corev1.PodList{}}, []byte(body)) })
	}
}

func TestMalformedUnstructured(t *testing.T) {
	for name, body := range map[string]string{
		"number item":       `{"kind":"WidgetList","apiVersion":"x/v1","items":[{},1]}`,
		"huge number":       `{"kind":"WidgetList","apiVersion":"x/v1","items":[{"a":1e400}]}`,
		"no kind, bad item": `{"apiVersion":"x/v1","items":[{},"s"]}`,
		"syntax":            `{"kind":"WidgetList","apiVersion":"x/v1","items":[{"a":}]}`,
		"protobuf":          string(protobufOf(t, podList(1), scheme.Scheme)),
		"bad version":       `{"kind":"WidgetList","apiVersion":"x/y/z","items":[{}]}`,
	} {
		t.Run(name, func(t *testing.T) { against(t, Target{Unstructured: true}, []byte(body)) })
	}
}

func TestMalformedMetadata(t *testing.T) {
	for name, body := range map[string]string{
		"status":       `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`,
		"success":      `{"kind":"Status","apiVersion":"v1","status":"Success"}`,
		"podlist":      string(jsonOf(t, podList(2))),
		"pb podlist":   string(protobufOf(t, podList(2), scheme.Scheme)),
		"v1beta1":      `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1beta1","items":[]}`,
		"no kind":      `{"apiVersion":"meta.k8s.io/v1","items":[{"metadata":{"name":"a"}}]}`,
		"bad item":     `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","items":[{"metadata":{"name":1}}]}`,
		"pb truncated": string(protobufOf(t, partials(), metaScheme)[:300]),
	} {
		t.Run(name, func(t *testing.T) { against(t, Target{Metadata: true}, []byte(body)) })
	}
}

func TestReadError(t *testing.T) {
	body := jsonOf(t, podList(20))
	for _, cut := range []int{0, 10, len(body) / 2, len(body)} {
		for _, w := range []int{1, 2} {
			_, err := Decode(context.Background(), &failing{body[:cut], errRead}, Target{Typed: &corev1.PodList{}}, Options{Workers: w})
			if !errors.Is(err, errRead) {
				t.Fatalf("cut %d, workers %d: %v, want the read error wrapped", cut, w, err)
			}
		}
	}
}

// blocking returns b, then blocks until release is closed.
type blocking struct {
	b       []byte
	release chan struct{}
}

func (r *blocking) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		<-r.release
		return 0, errRead
	}
	n := copy(p, r.b[:min(len(r.b), 4096)])
	r.b = r.b[n:]
	return n, nil
}

func TestCancelJoinsWorkers(t *testing.T) {
	body := jsonOf(t, podList(200))
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	var once bool
	_, err := Decode(ctx, &failing{body, errRead}, Target{Typed: &corev1.PodList{}}, Options{Workers: 4, Meta: func(metav1.ListMeta) {
		if !once {
			once = true
			close(started)
			cancel()
		}
	}})
	<-started
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled wrapped", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines after Decode, %d before", n, before)
	}
}
