package watchdecode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	restclient "k8s.io/client-go/rest"

	"github.com/kreflector/cache/internal/podgen"
)

// heldObj is a heldAsker's answer: key names what it stands for.
type heldObj struct{ key string }

func (*heldObj) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (h *heldObj) DeepCopyObject() runtime.Object { c := *h; return &c }

// heldAsker answers Held for every object whose name ends in an even
// digit, with a *heldObj naming it, and records what it was asked.
type heldAsker struct {
	mu    sync.Mutex
	asked map[string]int
}

func (h *heldAsker) held(ns, name, rv string) (runtime.Object, bool) {
	key := ns + "/" + name + "@" + rv
	h.mu.Lock()
	h.asked[key]++
	h.mu.Unlock()
	if d := name[len(name)-1]; (d-'0')%2 != 0 {
		return nil, false
	}
	return &heldObj{key: key}, true
}

// keyOf is the key heldAsker is asked for obj.
func keyOf(t *testing.T, obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		t.Fatal(err)
	}
	return m.GetNamespace() + "/" + m.GetName() + "@" + m.GetResourceVersion()
}

// With Held set, the ADDED events at the start of a stream that Held
// answers for are delivered as its answer, undecoded, and Item is not
// run on them; after the first event of another type (the
// initial-events-end bookmark) Held is asked nothing, ADDED events
// included. Every other event is client-go's. So for a clientset's
// protobuf and JSON, and for the dynamic client's unstructured objects.
func TestHeldAnswersForInitialAddedEvents(t *testing.T) {
	evs := script(40)
	end := slices.IndexFunc(evs, func(ev watch.Event) bool { return ev.Type == watch.Bookmark })
	late := watch.Event{Type: watch.Added, Object: podgen.Pod(60, 600)}
	evs = slices.Insert(evs, end+1, late)
	dynamicSerializer := dynamic.ConfigFor(&restclient.Config{Host: "http://localhost"}).NegotiatedSerializer
	for _, c := range []struct {
		name  string
		s     runtime.NegotiatedSerializer
		media string
	}{
		{"protobuf", typedSerializer, mediaProtobuf},
		{"JSON", typedSerializer, mediaJSON},
		{"unstructured", dynamicSerializer, mediaJSON},
	} {
		body := encode(t, c.media, evs)
		want := drain(clientGo(t, c.s, c.media, io.NopCloser(bytes.NewReader(body))))
		for _, workers := range []int{1, 2, 4} {
			name := fmt.Sprintf("%s, %d workers", c.name, workers)
			h := &heldAsker{asked: map[string]int{}}
			got, itemOnStandin := drainHeld(body, mustDecoders(c.s), Options{Workers: workers, MediaType: c.media, Held: h.held})
			if len(got) != len(want) {
				t.Fatalf("%s: %d events, want %d", name, len(got), len(want))
			}
			standIns := countStandIns(t, name, got, want, end)
			if n := h.asked[keyOf(t, late.Object)]; n != 0 {
				t.Errorf("%s: asked %d times about an ADDED event after the bookmark", name, n)
			}
			// Each worker decodes its first Pod whole, learning its type.
			if standIns < 20-workers || standIns > 20 {
				t.Errorf("%s: %d stand-ins, want %d to 20", name, standIns, 20-workers)
			}
			if itemOnStandin {
				t.Errorf("%s: Item ran on a stand-in", name)
			}
		}
	}
}

// drainHeld drains a watcher over body with o, Item set to note whether
// it ran on a stand-in.
func drainHeld(body []byte, d *Decoders, o Options) (evs []watch.Event, itemOnStandin bool) {
	var mu sync.Mutex
	o.Item = func(obj runtime.Object) {
		if _, ok := obj.(*heldObj); ok {
			mu.Lock()
			itemOnStandin = true
			mu.Unlock()
		}
	}
	evs = drain(New(io.NopCloser(bytes.NewReader(body)), d, o))
	return evs, itemOnStandin
}

// countStandIns fails t unless every event of got is want's, or an ADDED
// event before the end (want's index) standing in for want's object; it
// returns how many stand in.
func countStandIns(t *testing.T, name string, got, want []watch.Event, end int) int {
	t.Helper()
	standIns := 0
	for i := range got {
		st, ok := got[i].Object.(*heldObj)
		if !ok || got[i].Type != watch.Added {
			sameEvents(t, got[i:i+1], want[i:i+1])
			continue
		}
		if i >= end || st.key != keyOf(t, want[i].Object) {
			t.Fatalf("%s: event %d stands in as %q; want %s, before the bookmark (event %d)", name, i, st.key, describe(want[i]), end)
		}
		standIns++
	}
	return standIns
}

// A JSON event of any other shape than kube-apiserver's (members
// reordered, spaced, or more of them) is decoded, and ends the run of
// initial events: Held is asked nothing from it on. (Of kube-apiserver's
// shape, the events after the first, which teaches the worker the kind,
// are asked about.)
func TestHeldNotAskedForOtherJSONShapes(t *testing.T) {
	pod := podJSON(t, 2)
	var rest []byte
	for i := 4; i <= 8; i += 2 {
		rest = fmt.Appendf(rest, "{\"type\":\"ADDED\",\"object\":%s}\n", podJSON(t, i))
	}
	for _, c := range []struct{ name, first string }{
		{"kube-apiserver's", fmt.Sprintf(`{"type":"ADDED","object":%s}`, pod)},
		{"reordered", fmt.Sprintf(`{"object":%s,"type":"ADDED"}`, pod)},
		{"spaced", fmt.Sprintf(`{"type": "ADDED", "object": %s}`, pod)},
		{"a later type", fmt.Sprintf(`{"type":"ADDED","object":%s,"type":"ADDED"}`, pod)},
		{"a third member", fmt.Sprintf(`{"type":"ADDED","object":%s,"x":{}}`, pod)},
		{"object null", `{"type":"ADDED","object":null}`},
	} {
		body := append([]byte(c.first+"\n"), rest...)
		want := drain(clientGo(t, typedSerializer, mediaJSON, io.NopCloser(bytes.NewReader(body))))
		h := &heldAsker{asked: map[string]int{}}
		got, _ := drainHeld(body, typed, Options{Workers: 1, MediaType: mediaJSON, Held: h.held})
		if c.name == "kube-apiserver's" {
			if len(h.asked) != 3 {
				t.Errorf("%s: asked about %v, want the 3 events after the first", c.name, h.asked)
			}
			continue
		}
		sameEvents(t, got, want)
		if len(h.asked) != 0 {
			t.Errorf("%s: asked about %v", c.name, h.asked)
		}
	}
}

// A frame of kube-apiserver's shape but for the ']' that closes it (which
// the splitter ends a frame at, as at a '}') is no initial event: it is
// decoded, and fails as client-go's framer fails it, after a kind was
// learned and with every identity answered for.
func TestHeldRefusesAFrameClosedByABracket(t *testing.T) {
	body := fmt.Appendf(nil, "{\"type\":\"ADDED\",\"object\":%s}\n{\"type\":\"ADDED\",\"object\":%s]\n{\"type\":\"ADDED\",\"object\":%s}\n",
		podJSON(t, 2), podJSON(t, 4), podJSON(t, 6))
	want := drain(clientGo(t, typedSerializer, mediaJSON, io.NopCloser(bytes.NewReader(body))))
	all := func(ns, name, rv string) (runtime.Object, bool) {
		return &heldObj{key: ns + "/" + name + "@" + rv}, true
	}
	got, _ := drainHeld(body, typed, Options{Workers: 1, MediaType: mediaJSON, Held: all})
	sameEvents(t, got, want)
}

// podJSON is Pod i as kube-apiserver writes it in JSON.
func podJSON(t *testing.T, i int) []byte {
	t.Helper()
	p := podgen.Pod(i, 100+i)
	p.APIVersion, p.Kind = "v1", "Pod"
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
