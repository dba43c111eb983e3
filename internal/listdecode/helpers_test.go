package listdecode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// served is an http.RoundTripper that answers every request with 200,
// body and Content-Type contentType: client-go's clients, whole, on
// bytes of our choosing.
type served struct {
	contentType string
	body        []byte
}

func (s *served) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": {s.contentType}},
		Body:       io.NopCloser(bytes.NewReader(s.body)),
		Request:    req,
	}, nil
}

// Content types as kube-apiserver sends them.
const (
	ctJSON     = "application/json"
	ctProtobuf = "application/vnd.kubernetes.protobuf"
)

var crGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// clients are client-go's clients on one canned response each, made
// once: clientGo swaps the response.
var clients struct {
	sync.Mutex
	served *served
	typed  kubernetes.Interface
	dyn    dynamic.Interface
	meta   metadata.Interface
}

// clientGo lists with client-go's client for t, answered with body: the
// clientset's List (Pods or ConfigMaps), the dynamic client's or the
// metadata client's.
func clientGo(tb testing.TB, t Target, contentType string, body []byte) (runtime.Object, error) {
	tb.Helper()
	clients.Lock()
	defer clients.Unlock()
	if clients.served == nil {
		clients.served = &served{}
		cfg := &rest.Config{Host: "https://apiserver.invalid", Transport: clients.served, QPS: -1}
		clients.typed = kubernetes.NewForConfigOrDie(cfg)
		clients.dyn = dynamic.NewForConfigOrDie(cfg)
		clients.meta = metadata.NewForConfigOrDie(cfg)
	}
	clients.served.contentType, clients.served.body = contentType, body
	ctx := context.Background()
	switch {
	case t.Unstructured:
		return nilOnErr(clients.dyn.Resource(crGVR).List(ctx, metav1.ListOptions{}))
	case t.Metadata:
		return nilOnErr(clients.meta.Resource(crGVR).List(ctx, metav1.ListOptions{}))
	}
	switch t.Typed.(type) {
	case *corev1.PodList:
		return nilOnErr(clients.typed.CoreV1().Pods("").List(ctx, metav1.ListOptions{}))
	case *corev1.ConfigMapList:
		return nilOnErr(clients.typed.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{}))
	}
	tb.Fatalf("no client for %T", t.Typed)
	return nil, nil
}

func nilOnErr[T runtime.Object](obj T, err error) (runtime.Object, error) {
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// errClass is what callers tell errors apart by: the apierrors reason, the
// runtime predicates, encoding/json's type errors, Interpret's syntax
// errors, a truncated protobuf, a read error.
func errClass(err error) string {
	var typeErr *json.UnmarshalTypeError
	var status apierrors.APIStatus
	switch {
	case err == nil:
		return "nil"
	case errors.As(err, &status):
		return "status:" + string(apierrors.ReasonForError(err))
	case runtime.IsMissingKind(err):
		return "missing kind"
	case runtime.IsMissingVersion(err):
		return "missing version"
	case runtime.IsNotRegisteredError(err):
		return "not registered"
	case errors.Is(err, errRead):
		return "read"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected EOF"
	case errors.As(err, &typeErr):
		return "json type"
	case strings.HasPrefix(err.Error(), "couldn't get version/kind; json parse error"):
		return "json syntax"
	}
	return "other"
}

var errRead = errors.New("test read error")

// readers are the ways the body arrives in the tests.
var readers = map[string]func([]byte) io.Reader{
	"whole":  func(b []byte) io.Reader { return bytes.NewReader(b) },
	"1 byte": func(b []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) },
	"chunks": func(b []byte) io.Reader { return &chunky{b: b, r: rand.New(rand.NewPCG(uint64(len(b)), 7))} },
}

// chunky returns random chunk sizes, up to 64 KiB.
type chunky struct {
	b []byte
	r *rand.Rand
}

func (c *chunky) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.b), 1+c.r.IntN(1<<uint(c.r.IntN(17))))
	copy(p, c.b[:n])
	c.b = c.b[n:]
	return n, nil
}

// failing returns b, then err.
type failing struct {
	b   []byte
	err error
}

func (f *failing) Read(p []byte) (int, error) {
	if len(f.b) == 0 {
		return 0, f.err
	}
	n := copy(p, f.b)
	f.b = f.b[n:]
	return n, nil
}

// compare decodes body with Decode at every worker count and reader, and
// checks each result against client-go's.
func compare(t *testing.T, tgt Target, contentType string, body []byte) {
	t.Helper()
	want, wantErr := clientGo(t, tgt, contentType, body)
	for _, workers := range []int{1, 2, 8} {
		for name, r := range readers {
			got, err := Decode(context.Background(), r(body), tgt, Options{Workers: workers})
			where := fmt.Sprintf("workers %d, %s reader", workers, name)
			same(t, where, got, err, want, wantErr)
		}
	}
}

// same checks one result against client-go's.
func same(t testing.TB, where string, got runtime.Object, err error, want runtime.Object, wantErr error) {
	t.Helper()
	if errClass(err) != errClass(wantErr) {
		t.Fatalf("%s: error %q (%s), client-go's %q (%s)", where, err, errClass(err), wantErr, errClass(wantErr))
	}
	if err != nil {
		if err.Error() != wantErr.Error() {
			t.Logf("%s: same class, other words: %q, client-go's %q", where, err, wantErr)
		}
		return
	}
	if !equal(got, want) {
		t.Fatalf("%s: objects differ\n got %s\nwant %s", where, dump(got), dump(want))
	}
}

func dump(obj runtime.Object) string {
	b, err := json.Marshal(obj)
	if err != nil {
		return fmt.Sprintf("%#v", obj)
	}
	return fmt.Sprintf("%T %s", obj, b)
}

// protobufOf encodes a list as kube-apiserver does (the Unknown's TypeMeta
// is the list's).
func protobufOf(tb testing.TB, list runtime.Object, typer *runtime.Scheme) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(typer, typer).Encode(list, &buf); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

var metaScheme = scheme.Scheme
