package jsonmeta

import "unicode/utf8"

// scanner reads JSON values in b from i. It checks what finding the end
// of a value needs (strings, escapes, nesting, the punctuation of the
// objects it reads members of); the bytes inside skipped values are not
// validated.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// at consumes c (after whitespace), if it is next.
func (s *scanner) at(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// members reads an object, calling member with each key (which must be
// plain; see str) once the colon after it is read: member reads the
// value and says whether to go on.
func (s *scanner) members(member func(key []byte) bool) bool {
	if !s.at('{') {
		return false
	}
	if s.at('}') {
		return true
	}
	for {
		s.space()
		key, plain, ok := s.str()
		if !ok || !plain || !s.at(':') || !member(key) {
			return false
		}
		if s.at('}') {
			return true
		}
		if !s.at(',') {
			return false
		}
	}
}

// plain reads a string value into dst; false unless it is a plain
// string.
func (s *scanner) plain(dst *[]byte) bool {
	s.space()
	v, plain, ok := s.str()
	if !ok || !plain {
		return false
	}
	*dst = v
	return true
}

// str reads a string at i and returns its bytes between the quotes;
// plain says they hold no escape, no control character and are UTF-8, so
// that they are the decoded string.
func (s *scanner) str() (text []byte, plain, ok bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false, false
	}
	start := s.i + 1
	plain = true
	for j := start; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			s.i = j + 1
			text = s.b[start:j]
			return text, plain && utf8.Valid(text), true
		case c == '\\':
			plain = false
			j++
		case c < 0x20:
			plain = false
		}
	}
	return nil, false, false
}

// skip reads past one value of any kind.
func (s *scanner) skip() bool {
	s.space()
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '"':
		_, _, ok := s.str()
		return ok
	case '{', '[':
		return s.nested()
	}
	start := s.i
	for s.i < len(s.b) && !isDelim(s.b[s.i]) {
		s.i++
	}
	return s.i > start
}

// nested reads past an object or array, to the bracket that closes it.
func (s *scanner) nested() bool {
	depth := 0
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				s.i++
				return true
			}
		case '"':
			if _, _, ok := s.str(); !ok {
				return false
			}
			continue
		}
		s.i++
	}
	return false
}

// isDelim reports whether c ends a number or literal (true, false, null).
func isDelim(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', ':', '{', '}', '[', ']', '"':
		return true
	}
	return false
}
