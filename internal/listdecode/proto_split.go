package listdecode

import (
	"encoding/binary"
	"io"
	"math"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Protobuf wire types.
const (
	wireVarint = 0
	wireI64    = 1
	wireBytes  = 2
	wireI32    = 5
)

// unknownRaw is the field number of runtime.Unknown's Raw.
const unknownRaw = 2

// protoSplit splits a protobuf list body: "k8s\x00" then a runtime.Unknown
// whose Raw is the list message. The items fields of the list go to the
// sink as they arrive; the envelope is the Unknown with every other field
// as it came and Raw without the items, decoded by the client's decoder at
// the end. Anything the split does not follow (a field that the generated
// code would reject, a length past the end) is passed through to the
// envelope untouched, so that the generated code meets it there; before
// Raw, the body is decoded whole instead. It runs on the calling
// goroutine.
type protoSplit struct {
	d  *decoding
	in *input

	before, after []byte // the Unknown's fields before and after Raw
	raw           []byte // Raw without the items
	cuts          []int  // len(raw) when each item was met
	rawSeen       bool
	typeMeta      runtime.TypeMeta // the first TypeMeta
	typeSeen      bool
	meta          []byte // the list's first ListMeta, before the items
	whole         bool   // decode the body whole instead
}

// run scans the Unknown's fields to the end of the body.
func (s *protoSplit) run() error {
	in := s.in
	for {
		if !in.ensure(1) {
			return in.failed()
		}
		in.mark = in.pos
		wire, ok := in.uvarint(math.MaxInt)
		if ok && int32(wire>>3) == unknownRaw && wire&7 == wireBytes {
			if err := s.rawField(); err != nil || s.whole {
				return err
			}
			continue
		}
		if !ok || !s.skip(wire, math.MaxInt) {
			return s.odd()
		}
		field := in.buf[in.mark:in.pos]
		in.mark = -1
		s.unknownField(wire, field)
	}
}

// odd handles a field of the Unknown the split does not follow: before
// Raw the body is decoded whole; after it, the rest goes to the envelope.
// The field starts at mark.
func (s *protoSplit) odd() error {
	s.in.pos = s.in.mark
	if !s.rawSeen {
		s.whole = true
		return nil
	}
	rest, err := s.in.rest()
	s.after = append(s.after, rest...)
	return err
}

// unknownField keeps a field of the Unknown other than Raw, and the first
// TypeMeta.
func (s *protoSplit) unknownField(wire uint64, field []byte) {
	if !s.rawSeen {
		s.before = append(s.before, field...)
	} else {
		s.after = append(s.after, field...)
	}
	if int32(wire>>3) != 1 || wire&7 != wireBytes || s.typeSeen || s.rawSeen {
		return
	}
	payload := field[len(field)-int(lengthOf(field)):]
	s.typeSeen = s.typeMeta.Unmarshal(payload) == nil
}

// lengthOf is the length prefix of a bytes field already checked by skip.
func lengthOf(field []byte) uint64 {
	_, n := binary.Uvarint(field)
	v, _ := binary.Uvarint(field[n:])
	return v
}

// skip moves pos past the payload of a field with tag wire, if it is one
// the generated code skips (or reads) without error, within limit bytes
// from pos; false (pos somewhere inside) otherwise.
func (s *protoSplit) skip(wire uint64, limit int) bool {
	in := s.in
	n := 0
	switch {
	case int32(wire>>3) <= 0:
		return false
	case wire&7 == wireVarint:
		start := in.pos
		if _, ok := in.uvarint(limit); !ok {
			return false
		}
		return in.pos-start <= limit
	case wire&7 == wireI64:
		n = 8
	case wire&7 == wireI32:
		n = 4
	case wire&7 == wireBytes:
		start := in.pos
		l, ok := in.uvarint(limit)
		if !ok || int(l) < 0 || int(l) > limit-(in.pos-start) {
			return false
		}
		n = int(l)
	default:
		return false
	}
	if n > limit || !in.ensure(n) {
		return false
	}
	in.pos += n
	return true
}

// rawField scans Raw, the list message, whose tag is before pos.
func (s *protoSplit) rawField() error {
	in := s.in
	if s.rawSeen {
		// Raw again: client-go keeps the last one.
		s.d.sink.close()
		s.d.sink = newSink(s.d.ctx, s.d.p, s.d.media, s.d.o)
		s.raw, s.cuts = s.raw[:0], s.cuts[:0]
	}
	l, ok := in.uvarint(math.MaxInt)
	if !ok || int(l) < 0 {
		return s.odd()
	}
	if !s.rawSeen && !s.d.p.streams(s.typeMeta.APIVersion, s.typeMeta.Kind, s.typeSeen) {
		in.pos = in.mark
		s.whole = true
		return nil
	}
	s.rawSeen = true
	in.mark = -1
	return s.list(int(l))
}

// list scans the list message of l bytes at pos: each items field's
// payload goes to the sink; every other field, and anything from the
// first field the split does not follow on, goes to raw.
func (s *protoSplit) list(l int) error {
	in, p := s.in, s.d.p
	for l > 0 {
		in.mark = in.pos
		wire, ok := in.uvarint(l)
		item := ok && int32(wire>>3) == p.protoItem && wire&7 == wireBytes
		switch {
		case item:
			n, ok := in.uvarint(l - (in.pos - in.mark))
			if !ok || int(n) < 0 || int(n) > l-(in.pos-in.mark) || !in.ensure(int(n)) {
				return s.passRaw(l)
			}
			s.d.earlyMeta(s.protoMeta)
			s.cuts = append(s.cuts, len(s.raw))
			data := in.buf[in.pos : in.pos+int(n) : in.pos+int(n)]
			in.pos += int(n)
			l -= in.pos - in.mark
			in.mark = -1
			if err := s.d.sink.add(data); err != nil {
				return err
			}
		case !ok || int32(wire>>3) == p.protoItem || !s.skip(wire, l-(in.pos-in.mark)):
			return s.passRaw(l)
		default:
			field := in.buf[in.mark:in.pos]
			if int32(wire>>3) == p.protoMeta && wire&7 == wireBytes && s.meta == nil && s.d.sink.n == 0 {
				s.meta = append([]byte(nil), field[len(field)-int(lengthOf(field)):]...)
			}
			s.raw = append(s.raw, field...)
			l -= len(field)
			in.mark = -1
		}
	}
	return nil
}

// passRaw copies the rest of the list message, l bytes from mark, to raw
// as it is. The body ending first is the generated Unknown's error.
func (s *protoSplit) passRaw(l int) error {
	in := s.in
	in.pos = in.mark
	for l > 0 {
		if in.pos == len(in.buf) && !in.more() {
			if err := in.failed(); err != nil {
				return err
			}
			return io.ErrUnexpectedEOF
		}
		n := min(l, len(in.buf)-in.pos)
		s.raw = append(s.raw, in.buf[in.pos:in.pos+n]...)
		in.pos += n
		l -= n
		in.mark = in.pos
	}
	in.mark = -1
	return nil
}

// protoMeta decodes the list's metadata seen before its items (false if
// there was none, or it does not decode).
func (s *protoSplit) protoMeta() (metav1.ListMeta, bool) {
	var m metav1.ListMeta
	if s.meta == nil || m.Unmarshal(s.meta) != nil {
		return m, false
	}
	return m, true
}

// envelope is the body without the items: the magic, the Unknown's
// fields before Raw, Raw without the items, and the fields after it.
func (s *protoSplit) envelope() []byte {
	out := make([]byte, 0, len(protobufMagic)+len(s.before)+len(s.raw)+len(s.after)+12)
	out = append(out, protobufMagic...)
	out = append(out, s.before...)
	if s.rawSeen {
		out = binary.AppendUvarint(out, unknownRaw<<3|wireBytes)
		out = binary.AppendUvarint(out, uint64(len(s.raw)))
		out = append(out, s.raw...)
	}
	return append(out, s.after...)
}

// itemFirst tells whether item at's error comes before the envelope's
// error in the generated code's decode of the whole body: the Unknown is
// decoded first, then the list's fields in order, so the item is first
// unless the Unknown fails or the list's fields before the item do.
func (s *protoSplit) itemFirst(_ error, at int) bool {
	var unk runtime.Unknown
	if unk.Unmarshal(s.envelope()[len(protobufMagic):]) != nil {
		return false
	}
	list, ok := s.d.p.newList().(protoUnmarshaler)
	if !ok || list.Unmarshal(s.raw) == nil {
		return false
	}
	return at < len(s.cuts) && list.Unmarshal(s.raw[:s.cuts[at]]) == nil
}
