package watchdecode

import (
	"bytes"
	"encoding/json"
	"testing"
	"testing/synctest"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// FuzzDecode: any bytes, as JSON or as protobuf, at any worker count and
// read size, give client-go's events and ending, and the watcher's
// goroutines all exit (the bubble ends; a hang would deadlock it).
func FuzzDecode(f *testing.F) {
	for _, media := range medias {
		for _, b := range [][]byte{encode(f, media, small()), encode(f, media, script(1))} {
			f.Add(b, media == mediaProtobuf, uint8(1), uint8(0))
			f.Add(b[:len(b)-5], media == mediaProtobuf, uint8(2), uint8(3))
		}
	}
	f.Add([]byte(`{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1"}} {]`), false, uint8(2), uint8(1))
	f.Add([]byte("\x00\x00\x00\x00\x00\x00\x00\x02\n\x01"), true, uint8(3), uint8(1))
	f.Fuzz(func(t *testing.T, body []byte, protobuf bool, workers, read uint8) {
		media := mediaJSON
		if protobuf {
			media = mediaProtobuf
		}
		synctest.Test(t, func(t *testing.T) {
			want := drain(clientGo(t, typedSerializer, media, newReads(body, 1<<30, nil)))
			w := New(newReads(body, -int(read), nil), typed, Options{Workers: int(workers % 9), MediaType: media})
			if got := drain(w); !sameEventList(got, want) {
				sameEvents(t, got, want)
			}
		})
	})
}

// FuzzJSONFrames: the JSON splitter, fed any bytes whole or a byte at a
// time, cuts the first object where encoding/json's Decoder does; where
// it cuts anything else, encoding/json rejects the frame (so the
// serializers refuse it and client-go's decoding takes over).
func FuzzJSONFrames(f *testing.F) {
	f.Add([]byte(` {"a":"b\"}","c":[{"d":"\\"}]} {}`))
	f.Add([]byte(`{"a":[}`))
	f.Add([]byte("{\"a\x01\":1}"))
	f.Add([]byte(`  x`))
	f.Fuzz(func(t *testing.T, data []byte) {
		whole := (&jsonFrames{}).next(data, 0)
		s, step := &jsonFrames{}, cut{}
		for n := 1; n <= len(data); n++ {
			if step = s.next(data[:n], n-1); step.end > 0 || step.bad {
				break
			}
		}
		if len(data) > 0 && (whole.end != step.end || whole.bad != step.bad || whole.skip != step.skip || whole.commas != step.commas) {
			t.Fatalf("whole %+v, byte by byte %+v", whole, step)
		}
		var raw json.RawMessage
		err := json.NewDecoder(bytes.NewReader(data)).Decode(&raw)
		switch {
		case err == nil && raw[0] == '{':
			if whole.end == 0 || !bytes.Equal(data[whole.skip:whole.end], raw) {
				t.Fatalf("encoding/json's object %q, our cut %+v", raw, whole)
			}
		case whole.end > 0 && json.Valid(data[whole.skip:whole.end]):
			t.Fatalf("cut a valid object %q where encoding/json fails (%v)", data[whole.skip:whole.end], err)
		}
	})
}

// FuzzHeldJSON: a JSON stream whose every identity Held answers for
// stands in only for initial ADDED events, each for the object client-go
// decodes (or where client-go fails on bytes past what is read, the one
// fault a stand-in does not see, up to that failure); every other event
// is client-go's.
func FuzzHeldJSON(f *testing.F) {
	initial := []watch.Event{{Type: watch.Added, Object: configMap("a", 10)}, {Type: watch.Added, Object: configMap("b", 11)}}
	f.Add(encode(f, mediaJSON, append(initial, small()...)), uint8(1))
	f.Add(encode(f, mediaJSON, append(initial, small()...)), uint8(2))
	f.Add(encode(f, mediaJSON, script(2)), uint8(1))
	f.Add([]byte(`{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"1"}}}`+
		`{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"b","resourceVersion":"2"}}]`+
		`{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c","resourceVersion":"3"}}}`), uint8(1))
	f.Add([]byte(`{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"1"}}}`+
		`{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"b","resourceVersion":"2"},"spec":[}}`), uint8(1))
	f.Fuzz(func(t *testing.T, body []byte, workers uint8) {
		want := drain(clientGo(t, typedSerializer, mediaJSON, newReads(body, 1<<30, nil)))
		held := func(ns, name, rv string) (runtime.Object, bool) {
			return &heldObj{key: ns + "/" + name + "@" + rv}, true
		}
		got := drain(New(newReads(body, 1<<30, nil), typed, Options{Workers: 1 + int(workers%4), MediaType: mediaJSON, Held: held}))
		checkHeldEvents(t, got, want)
	})
}

// checkHeldEvents fails t unless got is want but for stand-ins as
// FuzzHeldJSON allows them.
func checkHeldEvents(t *testing.T, got, want []watch.Event) {
	t.Helper()
	initial := true
	for i := range got {
		st, ok := got[i].Object.(*heldObj)
		if !ok {
			initial = initial && got[i].Type == watch.Added
			if i >= len(want) || !sameEventList(got[i:i+1], want[i:i+1]) {
				sameEvents(t, got, want)
				return
			}
			continue
		}
		switch {
		case !initial || got[i].Type != watch.Added:
			t.Fatalf("event %d stands in (%s) after the initial ADDED events", i, st.key)
		case i < len(want) && want[i].Type == watch.Error:
			return // client-go failed on bytes a stand-in does not read
		case i >= len(want) || want[i].Type != watch.Added || keyOf(t, want[i].Object) != st.key:
			t.Fatalf("event %d stands in as %q, client-go's is %v", i, st.key, want[i:min(i+1, len(want))])
		}
	}
	if len(got) != len(want) {
		sameEvents(t, got, want)
	}
}
