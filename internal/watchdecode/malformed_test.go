package watchdecode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// small is a short stream, small enough to cut at every byte.
func small() []watch.Event {
	return []watch.Event{
		{Type: watch.Added, Object: configMap("a", 10)},
		{Type: watch.Modified, Object: configMap("b", 11)},
		{Type: watch.Deleted, Object: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "n", ResourceVersion: "12"}}},
	}
}

// frameStarts is where each frame of a body of media begins, by
// splitting it as the reader does.
func frameStarts(t *testing.T, media string, body []byte) []int {
	var split splitter = &jsonFrames{}
	if media == mediaProtobuf {
		split = lengthFrames{}
	}
	var starts []int
	for at := 0; at < len(body); {
		c := split.next(body[at:], 0)
		if c.end == 0 && len(bytes.TrimSpace(body[at:])) == 0 {
			break
		}
		if c.end == 0 {
			t.Fatalf("no frame at %d", at)
		}
		starts = append(starts, at+c.skip)
		at += c.end
	}
	return starts
}

// replaceIn returns body with the first old after offset at replaced.
func replaceIn(body []byte, at int, old, new string) []byte {
	i := bytes.Index(body[at:], []byte(old))
	if i < 0 {
		panic("no " + old)
	}
	out := append([]byte{}, body[:at+i]...)
	out = append(out, new...)
	return append(out, body[at+i+len(old):]...)
}

func insertAt(body []byte, at int, s string) []byte {
	out := append([]byte{}, body[:at]...)
	return append(append(out, s...), body[at:]...)
}

// TestMalformedJSON: broken frames in the middle of a stream give
// client-go's events, then its ERROR event, and end.
func TestMalformedJSON(t *testing.T) {
	body := encode(t, mediaJSON, script(6))
	at := frameStarts(t, mediaJSON, body)[3]
	cases := map[string][]byte{
		"control character in a string": replaceIn(body, at, `"name"`, "\"na\x01me\""),
		"bad syntax":                    replaceIn(body, at, `":`, `";`),
		"mismatched bracket":            replaceIn(body, at, `}`, `]`),
		"unknown event type":            replaceIn(body, at, `"ADDED"`, `"ADDEX"`),
		"unknown kind":                  replaceIn(body, at, `"kind":"Pod"`, `"kind":"Pxd"`),
		"no object":                     insertAt(body, at, `{"type":"ADDED"}`),
		"empty object":                  insertAt(body, at, `{}`),
		"garbage between frames":        insertAt(body, at, "x"),
		"a number between frames":       insertAt(body, at, "123 "),
		"a string between frames":       insertAt(body, at, `"s"`),
		"an array between frames":       insertAt(body, at, `[{"type":"ADDED"}]`),
		"null between frames":           insertAt(body, at, "null"),
		"whitespace between frames":     insertAt(body, at, " \t\r\n\n "),
		"no whitespace between frames":  bytes.ReplaceAll(body, []byte("}\n{"), []byte("}{")),
		"a backslash before a quote":    replaceIn(body, at, `"name":"`, `"name":"\\\"`),
		"empty":                         {},
		"whitespace only":               []byte(" \n\n"),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			sameAsClientGo(t, mediaJSON, b, nil, false)
			if len(b) > 0 && (b[0] == '{' || isSpace(b[0])) {
				sameAsClientGo(t, mediaJSON, b, nil, true)
			}
		})
	}
}

// TestMalformedProtobuf: broken frames in the middle of a stream give
// client-go's events, then its ending.
func TestMalformedProtobuf(t *testing.T) {
	body := encode(t, mediaProtobuf, script(6))
	at := frameStarts(t, mediaProtobuf, body)[3] - 4
	length := func(n uint32) []byte {
		b := append([]byte{}, body...)
		binary.BigEndian.PutUint32(b[at:], n)
		return b
	}
	flip := append([]byte{}, body...)
	for i := at + 4; i < at+40; i++ {
		flip[i] ^= 0x5a
	}
	cases := map[string][]byte{
		"a huge length":          length(1 << 30),
		"a length over 16 MiB":   length(16<<20 + 1),
		"a length over maxFrame": length(maxFrame),
		"a shorter length":       length(binary.BigEndian.Uint32(body[at:]) - 1),
		"a longer length":        length(binary.BigEndian.Uint32(body[at:]) + 1),
		"a zero length":          insertAt(body, at, "\x00\x00\x00\x00"),
		"flipped bytes":          flip,
		"unknown event type":     replaceIn(body, at, "ADDED", "ADDEX"),
		"unknown kind":           replaceIn(body, at, "\x03Pod", "\x03Pxd"),
		"empty":                  {},
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			sameAsClientGo(t, mediaProtobuf, b, nil, false)
			if len(b) > 0 && b[0] == 0 {
				sameAsClientGo(t, mediaProtobuf, b, nil, true)
			}
		})
	}
}

// TestTruncated: a stream cut at every byte, ending with io.EOF, a reset
// connection, a timeout or another read error, gives client-go's events
// and ending.
func TestTruncated(t *testing.T) {
	ends := map[string]error{
		"EOF":           io.EOF,
		"reset":         fmt.Errorf("read tcp: %w", syscall.ECONNRESET),
		"timeout":       timeoutError{},
		"other":         errors.New("boom"),
		"unexpectedEOF": io.ErrUnexpectedEOF,
	}
	for _, media := range medias {
		body := encode(t, media, small())
		for name, end := range ends {
			t.Run(media+"/"+name, func(t *testing.T) {
				for cut := range len(body) + 1 {
					sameAsClientGoQuick(t, media, body[:cut], end)
				}
			})
		}
	}
}

type timeoutError struct{}

func (timeoutError) Error() string { return "i/o timeout" }
func (timeoutError) Timeout() bool { return true }

// sameAsClientGoQuick is sameAsClientGo for many bodies: whole and
// byte-by-byte reads, 0 to 2 workers, declared media type.
func sameAsClientGoQuick(t *testing.T, media string, body []byte, end error) {
	t.Helper()
	want := drain(clientGo(t, typedSerializer, media, newReads(body, 1<<30, end)))
	for _, n := range []int{1 << 30, 1} {
		for _, workers := range []int{0, 1, 2} {
			got := drain(New(newReads(body, n, end), typed, Options{Workers: workers, MediaType: media}))
			if !sameEventList(got, want) {
				t.Errorf("%d bytes, reads of %d, %d workers:", len(body), n, workers)
				sameEvents(t, got, want)
			}
		}
	}
}
