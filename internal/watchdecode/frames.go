package watchdecode

import (
	"bytes"
	"encoding/binary"
)

// maxFrame is the longest frame the reader hands to the workers; a longer
// one goes to client-go's decoding (whose streaming decoder refuses
// frames above 16 MiB), as everything the reader does not split does.
const maxFrame = 8 << 20

// cut is where a splitter found the next frame of b, the unqueued part of
// the stream (it begins where the last frame ended).
type cut struct {
	end  int  // > 0: b[:end] is the next frame
	skip int  // the bytes of b[:end] before the frame's payload
	need int  // end == 0: how long b must grow for the frame, if known
	bad  bool // b does not begin with a frame the splitter takes
	// commas: for a JSON frame, the commas between its object's members
	// (one for an event of a type and an object).
	commas int
}

// splitter finds frames. It is used by the reader goroutine only.
type splitter interface {
	// next finds the first frame of b, of which b[:from] was scanned by
	// the call before (which found no frame in it).
	next(b []byte, from int) cut
}

// lengthFrames splits protobuf watch streams: frames of a 4-byte
// big-endian length followed by that many bytes, as
// protobuf.LengthDelimitedFramer's reader takes them.
type lengthFrames struct{}

func (lengthFrames) next(b []byte, _ int) cut {
	if len(b) < 4 {
		return cut{need: 4}
	}
	n := binary.BigEndian.Uint32(b)
	if n > maxFrame-4 {
		return cut{bad: true}
	}
	if end := 4 + int(n); len(b) >= end {
		return cut{end: end, skip: 4}
	}
	return cut{need: 4 + int(n)}
}

// jsonFrames splits JSON watch streams into their top-level objects,
// whitespace before each one included. Wherever a stream is valid JSON
// its objects end where encoding/json's Decoder (json.Framer's reader)
// ends them: at the '}' that closes the first '{', strings (with their
// escapes) skipped. Where it is not, a frame may end elsewhere, but it
// then holds the first byte encoding/json rejects, so it fails to decode
// (the serializers run encoding/json's validation over every frame) and
// client-go's decoding takes over from its start. Anything but whitespace
// or '{' where an object should begin is bad.
type jsonFrames struct {
	skip   int  // bytes of whitespace before the frame's '{', once found
	depth  int  // objects and arrays open; 0: the '{' is not found yet
	str    bool // inside a string
	esc    bool // inside a string, after a backslash at the end of a read
	commas int  // commas seen at depth 1
}

func (s *jsonFrames) next(b []byte, from int) cut {
	i := from
	if s.depth == 0 {
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		if i == len(b) {
			return cut{bad: len(b) > maxFrame}
		}
		if b[i] != '{' {
			return cut{bad: true}
		}
		s.skip, s.depth = i, 1
		i++
	}
	for i < len(b) {
		if s.str {
			i = s.inString(b, i)
			continue
		}
		switch b[i] {
		case '"':
			s.str = true
		case ',':
			if s.depth == 1 {
				s.commas++
			}
		case '{', '[':
			s.depth++
		case '}', ']':
			s.depth--
			if s.depth == 0 {
				c := cut{end: i + 1, skip: s.skip, commas: s.commas}
				*s = jsonFrames{}
				return c
			}
		}
		i++
	}
	return cut{bad: len(b) > maxFrame}
}

// inString scans a string from b[i]: it returns the index after its
// closing quote (and leaves the string) or len(b). Linear in the bytes
// scanned: each quote and backslash is searched for once.
func (s *jsonFrames) inString(b []byte, i int) int {
	if s.esc {
		s.esc = false
		i++
	}
	for i < len(b) {
		end := len(b)
		if q := bytes.IndexByte(b[i:], '"'); q >= 0 {
			end = i + q
		}
		for i <= end {
			k := bytes.IndexByte(b[i:end], '\\')
			if k < 0 {
				break
			}
			i += k + 2 // the backslash and the byte it escapes
		}
		switch {
		case i > len(b): // a backslash ended b
			s.esc = true
			return len(b)
		case i > end: // the quote at end is escaped
			continue
		case end == len(b):
			return end
		}
		s.str = false
		return end + 1
	}
	return i
}
