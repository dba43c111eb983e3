package listdecode

import (
	"bytes"
	"encoding/json"
)

// maxDepth is encoding/json's limit on nesting: client-go's Interpret
// fails a body nested deeper.
const maxDepth = 10000

// errEnd marks the end of the body inside the JSON object: worded as
// encoding/json words it by jsonSyntax.
var errEnd = interpretError(json.Unmarshal([]byte("{"), new(struct{})))

// jsonSyntax is client-go's error for a body whose JSON is invalid at byte
// c, where c follows the text prefix would have before it: encoding/json
// is asked about prefix+c, so the words are its own (offsets aside).
func jsonSyntax(prefix string, c byte) error {
	return stdSyntax(append([]byte(prefix), c))
}

// The scanning primitives below look at in.buf[in.pos:] and leave in.pos
// after what they scanned; the bytes are kept from in.mark on as the
// input moves to new buffers. They check only what finding the end of a
// value needs (strings, escapes, nesting); the decoders check the rest.

// peek is the byte at pos, reading more if need be; false at the end.
func (in *input) peek() (byte, bool) {
	if in.pos == len(in.buf) && !in.more() {
		return 0, false
	}
	return in.buf[in.pos], true
}

// skipSpace moves pos past JSON whitespace.
func (in *input) skipSpace() {
	for {
		for in.pos < len(in.buf) {
			switch in.buf[in.pos] {
			case ' ', '\t', '\n', '\r':
				in.pos++
			default:
				return
			}
		}
		if !in.more() {
			return
		}
	}
}

// str scans the rest of a string whose opening quote is before pos.
func (in *input) str() error {
	for {
		i, buf := in.pos, in.buf
		for i < len(buf) {
			switch buf[i] {
			case '"':
				in.pos = i + 1
				return nil
			case '\\':
				if i+1 == len(buf) {
					goto refill
				}
				i += 2
			default:
				i++
			}
		}
	refill:
		in.pos = i
		if !in.more() {
			return errEnd
		}
	}
}

// value scans one value at pos, at nesting depth depth; prefix is the
// text before it for wording a syntax error (see jsonSyntax).
func (in *input) value(prefix string, depth int) error {
	c, ok := in.peek()
	switch {
	case !ok:
		return errEnd
	case c == '{' || c == '[':
		return in.nested(depth)
	case c == '"':
		in.pos++
		return in.str()
	case isDelim(c):
		return jsonSyntax(prefix, c)
	}
	return in.scalar()
}

// isDelim reports whether c ends a number or literal (true, false, null).
func isDelim(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', ':', '{', '}', '[', ']', '"':
		return true
	}
	return false
}

// scalar scans a number or literal: up to the next delimiter.
func (in *input) scalar() error {
	for {
		for in.pos < len(in.buf) {
			if isDelim(in.buf[in.pos]) {
				return nil
			}
			in.pos++
		}
		if !in.more() {
			return nil
		}
	}
}

// nested scans an object or array, to the closing bracket that brings
// the nesting back to where it began.
func (in *input) nested(depth int) error {
	d := 0
	for {
		for in.pos < len(in.buf) {
			c := in.buf[in.pos]
			in.pos++
			switch c {
			case '{', '[':
				d++
				if depth+d > maxDepth {
					return stdSyntax(append(bytes.Repeat([]byte{'['}, maxDepth), c))
				}
			case '}', ']':
				d--
				if d == 0 {
					return nil
				}
			case '"':
				if err := in.str(); err != nil {
					return err
				}
			}
		}
		if !in.more() {
			return errEnd
		}
	}
}

// key scans an object key at pos and returns its bytes (quotes included)
// and its text; prefix words a syntax error.
func (in *input) key(prefix string) (raw []byte, name string, err error) {
	c, ok := in.peek()
	if !ok {
		return nil, "", errEnd
	}
	if c != '"' {
		return nil, "", jsonSyntax(prefix, c)
	}
	in.mark = in.pos
	in.pos++
	if err := in.str(); err != nil {
		return nil, "", err
	}
	raw = in.buf[in.mark:in.pos]
	in.mark = -1
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw, string(raw[1 : len(raw)-1]), nil
	}
	if json.Unmarshal(raw, &name) != nil {
		name = ""
	}
	return raw, name, nil
}

// expect consumes byte want at pos (after whitespace); prefix words the
// syntax error if something else is there.
func (in *input) expect(want byte, prefix string) error {
	in.skipSpace()
	c, ok := in.peek()
	switch {
	case !ok:
		return errEnd
	case c != want:
		return jsonSyntax(prefix, c)
	}
	in.pos++
	return nil
}
