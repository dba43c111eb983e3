package watchdecode

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	leanpkg "github.com/kreflector/cache/internal/lean"
	"github.com/kreflector/cache/internal/podgen"
)

// protoFrames is the payloads of a protobuf stream's frames.
func protoFrames(t testing.TB, evs []watch.Event) [][]byte {
	body := encode(t, mediaProtobuf, evs)
	var frames [][]byte
	for len(body) > 0 {
		n := int(binary.BigEndian.Uint32(body))
		frames = append(frames, body[4:4+n])
		body = body[4+n:]
	}
	return frames
}

// pb is a length-delimited protobuf field.
func pb(n int, data []byte) []byte {
	out := []byte{byte(n<<3 | 2)}
	out = binary.AppendUvarint(out, uint64(len(data)))
	return append(out, data...)
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// chainOnly is a frame decoder of st that leaves every frame to the chain.
func chainOnly(st *streams) *frameDecoder {
	fd := newFrameDecoder(st, false)
	fd.fast = nil
	return fd
}

// eventFrame is a WatchEvent frame of type typ around unknown.
func eventFrame(typ string, unknown []byte) []byte {
	return cat(pb(1, []byte(typ)), pb(2, pb(1, cat(protoPrefix, unknown))))
}

// unknownOf is an Unknown of the given apiVersion, kind and raw bytes,
// followed by extra fields.
func unknownOf(apiVersion, kind string, raw []byte, extra ...[]byte) []byte {
	return cat(pb(1, cat(pb(1, []byte(apiVersion)), pb(2, []byte(kind)))), pb(2, raw), cat(extra...))
}

// fastVariants are frames around podRaw, a Pod's bytes: the usual shape
// and shapes the fast decoding must leave to the chain or get right.
func fastVariants(podRaw []byte) map[string][]byte {
	usual := eventFrame("ADDED", unknownOf("v1", "Pod", podRaw, pb(3, nil), pb(4, nil)))
	return map[string][]byte{
		"usual":               usual,
		"no content fields":   eventFrame("MODIFIED", unknownOf("v1", "Pod", podRaw)),
		"gzip named":          eventFrame("ADDED", unknownOf("v1", "Pod", podRaw, pb(3, []byte("gzip")), pb(4, nil))),
		"unknown field":       cat(usual, pb(5, []byte("x"))),
		"type twice":          cat(pb(1, []byte("DELETED")), usual),
		"varint field":        cat(usual, []byte{3 << 3, 1}),
		"long tag":            cat([]byte{0x8a, 0x00, 5}, []byte("ADDED"), pb(2, pb(1, cat(protoPrefix, unknownOf("v1", "Pod", podRaw))))),
		"bad type":            eventFrame("CHANGED", unknownOf("v1", "Pod", podRaw)),
		"no prefix":           cat(pb(1, []byte("ADDED")), pb(2, pb(1, unknownOf("v1", "Pod", podRaw)))),
		"prefix only":         cat(pb(1, []byte("ADDED")), pb(2, pb(1, protoPrefix))),
		"no kind":             eventFrame("ADDED", unknownOf("v1", "", podRaw)),
		"no version":          eventFrame("ADDED", unknownOf("", "Pod", podRaw)),
		"bad apiVersion":      eventFrame("ADDED", unknownOf("a/b/c", "Pod", podRaw)),
		"unregistered":        eventFrame("ADDED", unknownOf("v1", "Gadget", podRaw)),
		"other kind":          eventFrame("ADDED", unknownOf("v1", "ConfigMap", podRaw)),
		"cut object":          eventFrame("ADDED", unknownOf("v1", "Pod", podRaw[:len(podRaw)-7])),
		"cut frame":           usual[:len(usual)-3],
		"length past the end": cat(pb(1, []byte("ADDED")), []byte{2<<3 | 2, 0xff, 0x7f}),
		"empty":               {},
		"no object":           pb(1, []byte("ADDED")),
		"empty object":        eventFrame("ADDED", unknownOf("v1", "Pod", nil)),
		"empty status":        eventFrame("ERROR", unknownOf("v1", "Status", nil)),
	}
}

// TestProtoFastDecodesAsTheChain: every frame, of the usual shape or not,
// decodes to the event (or error) client-go's chain makes of it, before
// and after the Pod's type is learned.
func TestProtoFastDecodesAsTheChain(t *testing.T) {
	evs := script(2)
	frames := protoFrames(t, evs)
	podRaw := podBytes(t, frames[0])
	variants := fastVariants(podRaw)
	for i, f := range frames {
		variants[fmt.Sprintf("script event %d", i)] = f
	}
	st := typed.protobuf
	for _, learned := range []bool{false, true} {
		for name, frame := range variants {
			fast, chain := newFrameDecoder(st, false), chainOnly(st)
			if fast.fast == nil {
				t.Fatal("no fast decoding for a clientset's protobuf streams")
			}
			if learned {
				if _, err := fast.decode(frames[0]); err != nil {
					t.Fatal(err)
				}
			}
			got, gotErr := fast.decode(frame)
			want, wantErr := chain.decode(frame)
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
				t.Errorf("%s (learned %v): got %s, %v; chain %s, %v", name, learned, describe(got), gotErr, describe(want), wantErr)
			}
		}
	}
}

// podBytes is the Pod's bytes in frame, an event of the usual shape.
func podBytes(t testing.TB, frame []byte) []byte {
	_, raw, ok := watchEventFields(frame)
	if !ok {
		t.Fatal("the encoder's frame is not of the usual shape")
	}
	_, data, ok := unknownFields(raw[len(protoPrefix):])
	if !ok {
		t.Fatal("the encoder's object is not of the usual shape")
	}
	return data
}

// TestProtoFastCopiesNothing: once a kind is learned, a frame of it costs
// the chain's allocations less the copies of its bytes (the streaming
// decoder's buffer is reused; RawExtension's and Unknown's raw bytes are
// not allocated), and its object is the chain's.
func TestProtoFastCopiesNothing(t *testing.T) {
	frames := protoFrames(t, []watch.Event{{Type: watch.Added, Object: podgen.Pod(1, 10)}, {Type: watch.Added, Object: podgen.Pod(2, 11)}})
	fast, chain := newFrameDecoder(typed.protobuf, false), chainOnly(typed.protobuf)
	if _, err := fast.decode(frames[0]); err != nil {
		t.Fatal(err)
	}
	if _, ok := fast.fast.types[typeKey{"v1", "Pod"}]; !ok {
		t.Fatal("the Pod's type was not learned from the chain's first object")
	}
	var obj *corev1.Pod
	fastAllocs := testing.AllocsPerRun(20, func() {
		ev, _ := fast.decode(frames[1])
		obj = ev.Object.(*corev1.Pod)
	})
	chainAllocs := testing.AllocsPerRun(20, func() { chain.decode(frames[1]) })
	if fastAllocs > chainAllocs-2 {
		t.Fatalf("%v allocations a frame, the chain's %v: the bytes were copied", fastAllocs, chainAllocs)
	}
	want, _ := chain.decode(frames[1])
	if !reflect.DeepEqual(obj, want.Object) {
		t.Fatalf("fast %s, chain %s", describe(watch.Event{Object: obj}), describe(want))
	}
}

// FuzzProtoFast: any frame decodes as the chain decodes it, with the
// Pod's type learned.
func FuzzProtoFast(f *testing.F) {
	frames := protoFrames(f, script(1))
	for _, v := range fastVariants(podBytes(f, frames[0])) {
		f.Add(v)
	}
	for _, fr := range frames {
		f.Add(fr)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		fast, chain := newFrameDecoder(typed.protobuf, false), chainOnly(typed.protobuf)
		if _, err := fast.decode(frames[0]); err != nil {
			t.Fatal(err)
		}
		got, gotErr := fast.decode(frame)
		want, wantErr := chain.decode(frame)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
			t.Fatalf("got %s, %v; chain %s, %v", describe(got), gotErr, describe(want), wantErr)
		}
		// Leaving managedFields out: the chain's event, managedFields dropped.
		lean := newFrameDecoder(typed.protobuf, true)
		if _, err := lean.decode(frames[0]); err != nil {
			t.Fatal(err)
		}
		got, gotErr = lean.decode(frame)
		if got.Object != nil {
			leanpkg.DropManagedFields(got.Object)
		}
		if want.Object != nil {
			leanpkg.DropManagedFields(want.Object)
		}
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
			t.Fatalf("managedFields left out: got %s, %v; chain %s, %v", describe(got), gotErr, describe(want), wantErr)
		}
	})
}

// TestProtoFastLearnsOnlyKubernetesTypes: a type of another package than
// Kubernetes' API packages is left to the chain, which copies the bytes
// its Unmarshal reads.
func TestProtoFastLearnsOnlyKubernetesTypes(t *testing.T) {
	f := newProtoFast(typed.protobuf, false)
	f.learnType(typeKey{"v1", "Pod"}, &corev1.Pod{})
	f.learnType(typeKey{"example.com/v1", "Widget"}, &widget{})
	if _, ok := f.types[typeKey{"v1", "Pod"}]; !ok {
		t.Error("a Pod's type was not learned")
	}
	if _, ok := f.types[typeKey{"example.com/v1", "Widget"}]; ok {
		t.Error("a type of another package was learned")
	}
}

// widget is a protobuf-decodable object of a package other than
// Kubernetes' own.
type widget struct{ corev1.Pod }

func (w *widget) Unmarshal(b []byte) error { return w.Pod.Unmarshal(b) }

// TestProtoFastLeavesOutManagedFields: with managedFields left out, a
// learned type's frames decode as the chain decodes them, managedFields
// then dropped, with fewer allocations; a refused one is still the chain's.
func TestProtoFastLeavesOutManagedFields(t *testing.T) {
	frames := protoFrames(t, []watch.Event{{Type: watch.Added, Object: podgen.Pod(1, 10)}, {Type: watch.Modified, Object: podgen.Pod(2, 11)}})
	lean, whole, chain := newFrameDecoder(typed.protobuf, true), newFrameDecoder(typed.protobuf, false), chainOnly(typed.protobuf)
	for _, fd := range []*frameDecoder{lean, whole} {
		if _, err := fd.decode(frames[0]); err != nil {
			t.Fatal(err)
		}
	}
	got, err := lean.decode(frames[1])
	if err != nil {
		t.Fatal(err)
	}
	want, _ := chain.decode(frames[1])
	if len(want.Object.(*corev1.Pod).ManagedFields) == 0 {
		t.Fatal("the test needs Pods with managedFields")
	}
	want.Object.(*corev1.Pod).ManagedFields = nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("left out: %s; the chain's without managedFields: %s", describe(got), describe(want))
	}
	leanAllocs := testing.AllocsPerRun(20, func() { lean.decode(frames[1]) })
	wholeAllocs := testing.AllocsPerRun(20, func() { whole.decode(frames[1]) })
	if leanAllocs >= wholeAllocs {
		t.Fatalf("%v allocations a frame leaving managedFields out, %v decoding them", leanAllocs, wholeAllocs)
	}
	bad := eventFrame("ADDED", unknownOf("v1", "Pod", pb(1, pb(17, []byte{1<<3 | 0, 1}))))
	gotBad, gotErr := lean.decode(bad)
	wantBad, wantErr := chain.decode(bad)
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !reflect.DeepEqual(gotBad, wantBad) {
		t.Fatalf("a refused entry: %s, %v; the chain's %s, %v", describe(gotBad), gotErr, describe(wantBad), wantErr)
	}
}
