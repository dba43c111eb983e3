package listdecode

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// jsonIdentity reads the namespace, name and resourceVersion of data, the
// JSON of one list item, as the item decoder (utiljson.Unmarshal: keys
// match case-sensitively, and a later value of a key wins) sets them in
// a typed object whose metav1.ObjectMeta is its "metadata": the last
// value of each, across every "metadata" of data, which the decoder
// merges. The slices alias data.
//
// ok is false, and the item is to be decoded, wherever what is read here
// could differ from what the decoder sets: a key escaped, or differing
// from "metadata", "name", "namespace" or "resourceVersion" only in case;
// one of the three whose value is not a plain string (null, escapes,
// control characters, bytes that are not UTF-8); a "metadata" that is not
// an object; JSON that does not parse as far as it is read. Values of
// other keys are only skipped: bytes the decoder would refuse there are
// not noticed here.
func jsonIdentity(data []byte) (namespace, name, resourceVersion []byte, ok bool) {
	return readIdentity(data, true)
}

// jsonMapIdentity is jsonIdentity for an item decoded into a map (an
// unstructured object), where a later "metadata" replaces an earlier one
// whole: an item with two is refused.
func jsonMapIdentity(data []byte) (namespace, name, resourceVersion []byte, ok bool) {
	return readIdentity(data, false)
}

// readIdentity is jsonIdentity, or with merge false jsonMapIdentity.
func readIdentity(data []byte, merge bool) (namespace, name, resourceVersion []byte, ok bool) {
	s := jscan{b: data}
	metas := 0
	ok = s.members(func(key []byte) bool {
		switch {
		case string(key) == "metadata":
			if metas++; metas > 1 && !merge {
				return false
			}
			return s.members(func(key []byte) bool {
				switch {
				case string(key) == "name":
					return s.plain(&name)
				case string(key) == "namespace":
					return s.plain(&namespace)
				case string(key) == "resourceVersion":
					return s.plain(&resourceVersion)
				case foldsTo(key, "name", "namespace", "resourceVersion"):
					return false
				}
				return s.skip()
			})
		case foldsTo(key, "metadata"):
			return false
		}
		return s.skip()
	})
	if !ok {
		return nil, nil, nil, false
	}
	return namespace, name, resourceVersion, true
}

// foldsTo says whether key equals one of names when case is ignored.
func foldsTo(key []byte, names ...string) bool {
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return true
		}
	}
	return false
}

// jscan reads a JSON value in b from i.
type jscan struct {
	b []byte
	i int
}

func (s *jscan) space() {
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
func (s *jscan) at(c byte) bool {
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
func (s *jscan) members(member func(key []byte) bool) bool {
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
func (s *jscan) plain(dst *[]byte) bool {
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
func (s *jscan) str() (text []byte, plain, ok bool) {
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
func (s *jscan) skip() bool {
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
func (s *jscan) nested() bool {
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

// jsonMetaType says whether t, a struct type, holds its identity where
// jsonIdentity reads it: a metav1.ObjectMeta field whose JSON name is
// "metadata", and no UnmarshalJSON of its own that could put it
// elsewhere.
func jsonMetaType(t reflect.Type) bool {
	unmarshaler := reflect.TypeFor[json.Unmarshaler]()
	if t.Kind() != reflect.Struct || t.Implements(unmarshaler) || reflect.PointerTo(t).Implements(unmarshaler) {
		return false
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Type == reflect.TypeFor[metav1.ObjectMeta]() && name == "metadata" {
			return true
		}
	}
	return false
}
