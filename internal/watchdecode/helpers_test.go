package watchdecode

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	restwatch "k8s.io/client-go/rest/watch"

	"github.com/kreflector/cache/internal/podgen"
)

// The media types of the tests.
var medias = []string{mediaJSON, mediaProtobuf}

// typed is a clientset's decoders.
var (
	typedSerializer = scheme.Codecs.WithoutConversion()
	typed           = mustDecoders(typedSerializer)
)

func mustDecoders(s runtime.NegotiatedSerializer) *Decoders {
	d, err := NewDecoders(s)
	if err != nil {
		panic(err)
	}
	return d
}

// script is the events of a realistic stream: a WatchList's initial
// events (Pods, a ConfigMap) and its end bookmark, changes, deletions, and
// a 410 ERROR.
func script(pods int) []watch.Event {
	var evs []watch.Event
	for i := range pods {
		evs = append(evs, watch.Event{Type: watch.Added, Object: podgen.Pod(i, 100+i)})
	}
	evs = append(evs,
		watch.Event{Type: watch.Added, Object: configMap("settings", 90)},
		watch.Event{Type: watch.Bookmark, Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			ResourceVersion: "500", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}},
		watch.Event{Type: watch.Modified, Object: podgen.Pod(1, 501)},
		watch.Event{Type: watch.Modified, Object: configMap("settings", 502)},
		watch.Event{Type: watch.Deleted, Object: podgen.Pod(0, 503)},
		watch.Event{Type: watch.Bookmark, Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "504"}}},
		watch.Event{Type: watch.Error, Object: &apierrors.NewResourceExpired("too old resource version: 1 (504)").ErrStatus},
	)
	return evs
}

func configMap(name string, rv int) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-1", ResourceVersion: fmt.Sprint(rv),
			Labels: map[string]string{"app": "settings"}},
		Data: map[string]string{"level": "debug", "json": `{"a":"b\"}"}`, "brace": "}}}{"},
	}
}

// encode writes evs as kube-apiserver writes a watch stream of media:
// each object with the versioned encoder of its kind, each WatchEvent
// with the media type's stream serializer through its framer's writer.
func encode(t testing.TB, media string, evs []watch.Event) []byte {
	return encodeWith(t, scheme.Codecs, schema.GroupVersions{corev1.SchemeGroupVersion, metav1.SchemeGroupVersion}, media, evs)
}

// encodeWith is encode with the objects' codecs and versions.
func encodeWith(t testing.TB, codecs serializer.CodecFactory, gvs runtime.GroupVersioner, media string, evs []watch.Event) []byte {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), media)
	if !ok {
		t.Fatalf("no serializer for %s", media)
	}
	objects := codecs.EncoderForVersion(info.Serializer, gvs)
	var buf bytes.Buffer
	frames := streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(&buf), info.StreamSerializer.Serializer)
	for _, ev := range evs {
		raw, err := runtime.Encode(objects, ev.Object)
		if err != nil {
			t.Fatal(err)
		}
		if err := frames.Encode(&metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: raw}}); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// clientGo is client-go's watcher over body, built as
// rest.Request.Watch builds it for a response of media.
func clientGo(t testing.TB, s runtime.NegotiatedSerializer, media string, body io.ReadCloser) watch.Interface {
	t.Helper()
	objects, events, framer, err := runtime.NewClientNegotiator(s, schema.GroupVersion{}).StreamDecoder(media, nil)
	if err != nil {
		t.Fatal(err)
	}
	dec := restwatch.NewDecoder(streaming.NewDecoder(framer.NewFrameReader(body), events), objects)
	return watch.NewStreamWatcher(dec, apierrors.NewClientErrorReporter(http.StatusInternalServerError, "GET", "ClientWatchDecoding"))
}

// drain receives every event of w until its result channel closes.
func drain(w watch.Interface) []watch.Event {
	var evs []watch.Event
	for ev := range w.ResultChan() {
		evs = append(evs, ev)
	}
	return evs
}

// sameEvents fails t unless got and want are deep-equal, event by event.
func sameEvents(t testing.TB, got, want []watch.Event) {
	t.Helper()
	for i := range max(len(got), len(want)) {
		switch {
		case i >= len(got):
			t.Fatalf("event %d missing: want %s", i, describe(want[i]))
		case i >= len(want):
			t.Fatalf("event %d extra: got %s", i, describe(got[i]))
		case !reflect.DeepEqual(got[i], want[i]):
			t.Fatalf("event %d:\n got %s\nwant %s", i, describe(got[i]), describe(want[i]))
		}
	}
}

func describe(ev watch.Event) string {
	if s, ok := ev.Object.(*metav1.Status); ok {
		return fmt.Sprintf("%s %#v", ev.Type, *s)
	}
	return fmt.Sprintf("%s %T %+v", ev.Type, ev.Object, ev.Object)
}

// reads is a body over b whose reads return at most n bytes (n <= 0:
// random sizes from 1 to 4096, and none at first and now and then,
// seeded by -n), then end with err (io.EOF if nil).
type reads struct {
	b   []byte
	n   int
	rnd *rand.Rand
	err error

	started bool
}

func newReads(b []byte, n int, err error) *reads {
	c := &reads{b: b, n: n, err: err}
	if n <= 0 {
		c.rnd = rand.New(rand.NewPCG(uint64(-n), 7))
	}
	if err == nil {
		c.err = io.EOF
	}
	return c
}

func (c *reads) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, c.err
	}
	n := c.n
	if c.rnd != nil {
		if !c.started || c.rnd.IntN(8) == 0 {
			c.started = true
			return 0, nil // allowed, if discouraged, by io.Reader
		}
		n = 1 + c.rnd.IntN(4096)
	}
	n = copy(p[:min(n, len(p))], c.b)
	c.b = c.b[n:]
	return n, nil
}

func (c *reads) Close() error { return nil }

// workerCounts are the tests' Workers: client-go's chain, one worker,
// two, more than the cores.
var workerCounts = []int{0, 1, 2, 8}

// readers are the ways the tests cut a body into reads.
var readers = []struct {
	name string
	n    int
}{{"whole", 1 << 30}, {"1byte", 1}, {"7bytes", 7}, {"random", -1}, {"random2", -2}}

// sameAsClientGo checks that body, read by each reader of the tests and
// ending with end (io.EOF if nil), gives client-go's events and ending
// at every count of workerCounts, its media type declared or (sniff) not.
func sameAsClientGo(t *testing.T, media string, body []byte, end error, sniff bool) {
	t.Helper()
	want := drain(clientGo(t, typedSerializer, media, newReads(body, 1<<30, end)))
	for _, rd := range readers {
		for _, workers := range workerCounts {
			o := Options{Workers: workers}
			if !sniff {
				o.MediaType = media
			}
			got := drain(New(newReads(body, rd.n, end), typed, o))
			if !sameEventList(got, want) {
				t.Errorf("%s, %d workers:", rd.name, workers)
				sameEvents(t, got, want)
			}
		}
	}
}

func sameEventList(got, want []watch.Event) bool {
	return reflect.DeepEqual(got, want) || len(got) == 0 && len(want) == 0
}
