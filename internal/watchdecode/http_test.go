package watchdecode

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"

	metascheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// serve is a server answering every request with body as a watch stream
// of media, written in random pieces, each flushed; if abort > 0 the
// connection is closed after abort bytes, mid-stream.
func serve(t *testing.T, media string, body []byte, abort int) *rest.Config {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", media+";stream=watch")
		w.WriteHeader(http.StatusOK)
		rnd := rand.New(rand.NewPCG(1, 2))
		b := body
		if abort > 0 {
			b = b[:abort]
		}
		for len(b) > 0 {
			n := min(len(b), 1+rnd.IntN(9000))
			w.Write(b[:n])
			w.(http.Flusher).Flush()
			b = b[n:]
		}
		if abort > 0 {
			panic(http.ErrAbortHandler)
		}
	}))
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: media, AcceptContentTypes: media}}
}

// get is the body of a GET of cfg's server.
func get(t *testing.T, cfg *rest.Config) io.ReadCloser {
	resp, err := http.Get(cfg.Host + "/api/v1/pods?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	return resp.Body
}

// TestSameEventsOverHTTP: a clientset's Watch (the rest client's own
// watcher) and ours, over the body of a Stream of the same request.
func TestSameEventsOverHTTP(t *testing.T) {
	for _, media := range medias {
		body := encode(t, media, script(30))
		for _, abort := range []int{0, len(body) / 2, len(body) - 3} {
			cfg := serve(t, media, body, abort)
			cs := kubernetes.NewForConfigOrDie(cfg)
			w, err := cs.CoreV1().Pods("").Watch(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := drain(w)
			if abort == 0 && len(want) != len(script(30)) {
				t.Fatalf("%s: client-go decoded %d events", media, len(want))
			}
			for _, workers := range workerCounts {
				t.Run(fmt.Sprintf("%s/abort=%d/workers=%d", media, abort, workers), func(t *testing.T) {
					stream, err := cs.CoreV1().RESTClient().Get().Resource("pods").
						VersionedParams(&metav1.ListOptions{Watch: true}, scheme.ParameterCodec).Stream(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					sameEvents(t, drain(New(stream, typed, Options{Workers: workers})), want)
				})
			}
		}
	}
}

// TestDynamicClient: the dynamic client's unstructured objects.
func TestDynamicClient(t *testing.T) {
	cfg := serve(t, mediaJSON, encode(t, mediaJSON, script(10)), 0)
	w, err := dynamic.NewForConfigOrDie(cfg).Resource(podsGVR).Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := drain(w)
	decs := mustDecoders(dynamic.ConfigFor(cfg).NegotiatedSerializer)
	for _, workers := range workerCounts {
		sameEvents(t, drain(New(get(t, cfg), decs, Options{Workers: workers})), want)
	}
}

// TestMetadataClient: the metadata client's PartialObjectMetadata, JSON
// and protobuf.
func TestMetadataClient(t *testing.T) {
	var evs []watch.Event
	for _, ev := range script(10) {
		if ev.Type != watch.Error {
			ev.Object = partial(ev.Object)
		}
		evs = append(evs, ev)
	}
	for _, media := range medias {
		body := encodeWith(t, metascheme.Codecs, metav1.SchemeGroupVersion, media, evs)
		cfg := serve(t, media, body, 0)
		w, err := metadata.NewForConfigOrDie(cfg).Resource(podsGVR).Watch(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := drain(w)
		if len(want) != len(evs) {
			t.Fatalf("%s: client-go decoded %d events", media, len(want))
		}
		decs := mustDecoders(metadata.ConfigFor(cfg).NegotiatedSerializer)
		for _, workers := range workerCounts {
			sameEvents(t, drain(New(get(t, cfg), decs, Options{Workers: workers})), want)
		}
	}
}

// partial is obj's metadata as the server sends it to the metadata client.
func partial(obj runtime.Object) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
		ObjectMeta: *obj.(metav1.ObjectMetaAccessor).GetObjectMeta().(*metav1.ObjectMeta),
	}
}
