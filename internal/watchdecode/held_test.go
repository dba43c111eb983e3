package watchdecode

import (
	"bytes"
	"io"
	"slices"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

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

// With Held set, the ADDED events at the start of a protobuf stream that
// Held answers for are delivered as its answer, undecoded, and Item is
// not run on them; after the first event of another type (the
// initial-events-end bookmark) Held is asked nothing, ADDED events
// included. Every other event is client-go's.
func TestHeldAnswersForInitialAddedEvents(t *testing.T) {
	evs := script(40)
	end := slices.IndexFunc(evs, func(ev watch.Event) bool { return ev.Type == watch.Bookmark })
	late := watch.Event{Type: watch.Added, Object: podgen.Pod(60, 600)}
	evs = slices.Insert(evs, end+1, late)
	body := encode(t, mediaProtobuf, evs)
	want := drain(clientGo(t, typedSerializer, mediaProtobuf, io.NopCloser(bytes.NewReader(body))))
	for _, workers := range []int{1, 2, 4} {
		h := &heldAsker{asked: map[string]int{}}
		var itemOnStandin bool
		var mu sync.Mutex
		item := func(obj runtime.Object) {
			if _, ok := obj.(*heldObj); ok {
				mu.Lock()
				itemOnStandin = true
				mu.Unlock()
			}
		}
		w := New(io.NopCloser(bytes.NewReader(body)), typed, Options{Workers: workers, MediaType: mediaProtobuf, Held: h.held, Item: item})
		got := drain(w)
		if len(got) != len(want) {
			t.Fatalf("%d workers: %d events, want %d", workers, len(got), len(want))
		}
		standIns := 0
		for i := range got {
			st, ok := got[i].Object.(*heldObj)
			if !ok || got[i].Type != watch.Added {
				sameEvents(t, got[i:i+1], want[i:i+1])
				continue
			}
			if i >= end || st.key != keyOf(t, want[i].Object) {
				t.Fatalf("%d workers: event %d stands in as %q; want %s, before the bookmark (event %d)", workers, i, st.key, describe(want[i]), end)
			}
			standIns++
		}
		if n := h.asked[keyOf(t, late.Object)]; n != 0 {
			t.Errorf("%d workers: asked %d times about an ADDED event after the bookmark", workers, n)
		}
		// Each worker decodes its first Pod whole, learning its type.
		if standIns < 20-workers || standIns > 20 {
			t.Errorf("%d workers: %d stand-ins, want %d to 20", workers, standIns, 20-workers)
		}
		if itemOnStandin {
			t.Errorf("%d workers: Item ran on a stand-in", workers)
		}
	}
}

// A JSON stream is never asked about: its objects' identity is not read.
func TestHeldNotAskedForJSON(t *testing.T) {
	body := encode(t, mediaJSON, script(10))
	h := &heldAsker{asked: map[string]int{}}
	got := drain(New(io.NopCloser(bytes.NewReader(body)), typed, Options{Workers: 2, MediaType: mediaJSON, Held: h.held}))
	want := drain(clientGo(t, typedSerializer, mediaJSON, io.NopCloser(bytes.NewReader(body))))
	sameEvents(t, got, want)
	if len(h.asked) != 0 {
		t.Fatalf("asked about %d JSON objects", len(h.asked))
	}
}
