package watchdecode

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// TestNoStreamDecoders: a serializer with neither JSON nor protobuf
// watch streams is refused.
func TestNoStreamDecoders(t *testing.T) {
	yamlOnly := runtime.NewSimpleNegotiatedSerializer(runtime.SerializerInfo{MediaType: "application/yaml",
		Serializer: json.NewYAMLSerializer(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme)})
	if _, err := NewDecoders(yamlOnly); err == nil {
		t.Fatal("no error")
	}
}

// TestUndecodableMediaType: a declared media type the client does not
// decode ends the stream with an ERROR event, as no watcher could decode
// it (client-go's Watch returns the negotiation's error instead).
func TestUndecodableMediaType(t *testing.T) {
	decs := mustDecoders(dynamic.ConfigFor(&rest.Config{}).NegotiatedSerializer)
	for _, workers := range workerCounts {
		body := encode(t, mediaProtobuf, small())
		evs := drain(New(newReads(body, 1<<30, nil), decs, Options{Workers: workers, MediaType: mediaProtobuf}))
		if len(evs) != 1 || evs[0].Type != watch.Error ||
			!strings.Contains(evs[0].Object.(*metav1.Status).Message, mediaProtobuf) {
			t.Fatalf("%d workers: got %v", workers, evs)
		}
	}
}

// TestFramerNotCut: a media type whose framer the reader does not know
// is decoded by client-go's chain alone, with the same events.
func TestFramerNotCut(t *testing.T) {
	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaJSON)
	info.StreamSerializer = &runtime.StreamSerializerInfo{Serializer: info.StreamSerializer.Serializer, Framer: json.YAMLFramer}
	s := runtime.NewSimpleNegotiatedSerializer(info)
	decs := mustDecoders(s)
	if decs.json.framing != framingNone {
		t.Fatal("the YAML framer is cut as JSON")
	}
	body := encode(t, mediaJSON, small())
	want := drain(clientGo(t, s, mediaJSON, newReads(body, 1<<30, nil)))
	for _, workers := range workerCounts {
		sameEvents(t, drain(New(newReads(body, 5, nil), decs, Options{Workers: workers})), want)
	}
}

// TestSniffJSONOnly: a client decoding JSON only takes any stream as
// JSON, its first byte notwithstanding.
func TestSniffJSONOnly(t *testing.T) {
	decs := mustDecoders(dynamic.ConfigFor(&rest.Config{}).NegotiatedSerializer)
	body := append([]byte("\x00"), encode(t, mediaJSON, small())...)
	want := drain(clientGo(t, dynamic.ConfigFor(&rest.Config{}).NegotiatedSerializer, mediaJSON, newReads(body, 1<<30, nil)))
	for _, workers := range workerCounts {
		sameEvents(t, drain(New(newReads(body, 3, nil), decs, Options{Workers: workers})), want)
	}
}
