package listdecode

import (
	"bytes"
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// jsonSplit splits a JSON list body: the items of its items array go to
// the sink as they arrive; everything else, with the array left empty
// ("items":[]), is the envelope, decoded by the client's decoder at the
// end. It runs on the calling goroutine.
type jsonSplit struct {
	d   *decoding
	in  *input
	env []byte

	// What client-go's Interpret would see so far: the last "kind" and
	// "apiVersion" (keys matched as encoding/json matches them, without
	// case), as strings; ok is false once one is not a string.
	kind, apiVersion  string
	kindSeen, verSeen bool
	typeOK            bool
	meta              []byte // the first "metadata" value, before items
	arrays            int
	whole             bool // the body did not stream: decode it whole
}

// run scans the body. On success the envelope is in env and the items
// are in the sink (if any); whole tells that the body is to be decoded
// whole instead, from env followed by in.rest().
func (s *jsonSplit) run() error {
	in := s.in
	s.typeOK = true
	if err := in.expect('{', ""); err != nil {
		return err
	}
	s.env = append(s.env, '{')
	in.skipSpace()
	if c, ok := in.peek(); ok && c == '}' {
		in.pos++
		s.env = append(s.env, '}')
		return s.end()
	}
	prefix := "{"
	for {
		in.skipSpace()
		if err := s.member(prefix); err != nil || s.whole {
			return err
		}
		in.skipSpace()
		c, ok := in.peek()
		switch {
		case !ok:
			return errEnd
		case c == ',':
			in.pos++
			s.env = append(s.env, ',')
			prefix = `{"a":0,`
			continue
		case c != '}':
			return jsonSyntax(`{"a":0`, c)
		}
		in.pos++
		s.env = append(s.env, '}')
		return s.end()
	}
}

// member scans one key and value of the list object.
func (s *jsonSplit) member(prefix string) error {
	in := s.in
	raw, name, err := in.key(prefix)
	if err != nil {
		return err
	}
	s.env = append(s.env, raw...)
	if err := in.expect(':', `{"a"`); err != nil {
		return err
	}
	s.env = append(s.env, ':')
	in.skipSpace()
	if name == s.d.p.jsonItems {
		if c, ok := in.peek(); ok && c == '[' {
			if s.arrays == 0 && !s.d.p.streams(s.apiVersion, s.kind, s.kindSeen && s.verSeen && s.typeOK) {
				s.whole = true
				return nil
			}
			s.lastItems(false)
			return s.items()
		}
		if s.arrays > 0 {
			s.lastItems(true)
		}
	}
	in.mark = in.pos
	if err := in.value(`{"a":`, 1); err != nil {
		return err
	}
	val := in.buf[in.mark:in.pos]
	in.mark = -1
	s.env = append(s.env, val...)
	s.note(name, val)
	return nil
}

// note keeps what the scan needs of a member other than the items: kind,
// apiVersion and the list's metadata.
func (s *jsonSplit) note(name string, val []byte) {
	switch {
	case bytes.EqualFold([]byte(name), []byte("kind")):
		s.kindSeen = true
		s.typeOK = s.typeOK && json.Unmarshal(val, &s.kind) == nil
	case bytes.EqualFold([]byte(name), []byte("apiVersion")):
		s.verSeen = true
		s.typeOK = s.typeOK && json.Unmarshal(val, &s.apiVersion) == nil
	case name == "metadata" && s.meta == nil && s.arrays == 0:
		s.meta = append([]byte(nil), val...)
	}
}

// lastItems notes an items member after which the list's items are the
// array about to be scanned, or (inEnvelope) the member's value, which is
// no array. As encoding/json keeps the last value of a key, the items of
// arrays before are dropped; those the dynamic client would only have
// parsed (into a map, before it reads the last array) then fail nothing
// but for their syntax.
func (s *jsonSplit) lastItems(inEnvelope bool) {
	s.d.itemsFrom, s.d.itemsInEnvelope = s.d.sink.n, inEnvelope
	if s.arrays > 0 && s.d.p.mode == unstructuredMode {
		s.d.sink.errs.from(s.d.sink.n)
	}
}

// items scans the items array, handing each item to the sink; the
// envelope gets an empty array.
func (s *jsonSplit) items() error {
	in := s.in
	in.pos++
	s.env = append(s.env, '[')
	s.arrays++
	in.skipSpace()
	if c, ok := in.peek(); ok && c == ']' {
		in.pos++
		s.env = append(s.env, ']')
		return nil
	}
	s.d.earlyMeta(s.jsonMeta)
	prefix := "["
	for {
		in.skipSpace()
		in.mark = in.pos
		if err := in.value(prefix, 2); err != nil {
			return err
		}
		data := in.buf[in.mark:in.pos:in.pos]
		in.mark = -1
		if err := s.d.sink.add(data); err != nil {
			return err
		}
		in.skipSpace()
		c, ok := in.peek()
		switch {
		case !ok:
			return errEnd
		case c == ',':
			in.pos++
			prefix = "[0,"
			continue
		case c != ']':
			return jsonSyntax("[0", c)
		}
		in.pos++
		s.env = append(s.env, ']')
		return nil
	}
}

// jsonMeta decodes the metadata seen before the items, as the typed
// decoder would (false if there was none, or it does not decode).
func (s *jsonSplit) jsonMeta() (metav1.ListMeta, bool) {
	var m metav1.ListMeta
	if s.meta == nil || utiljson.Unmarshal(s.meta, &m) != nil {
		return m, false
	}
	return m, true
}

// end checks that nothing but whitespace follows the list object.
func (s *jsonSplit) end() error {
	in := s.in
	in.skipSpace()
	if c, ok := in.peek(); ok {
		return jsonSyntax("{}", c)
	}
	return in.failed()
}
