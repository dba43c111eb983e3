package protometa

// The protobuf wire format, read as the generated Unmarshal methods of
// Kubernetes' API types read it: a field is a varint tag (field number <<
// 3 | wire type) followed by a varint (type 0), 8 bytes (1), a varint
// length and that many bytes (2), or 4 bytes (5). Groups (3, 4) are not
// read here: whatever has one is left to the generated code.

const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// field is one field of a message: its number and wire type, where it
// starts (its tag) and ends, and for wire type 2 its contents.
type field struct {
	num, wire  int
	start, end int
	body       []byte
}

// Varint reads a varint at data[i:] as the generated code does (at most
// ten bytes, the last not checked for overflow), returning it and the
// index after it; ok is false if it does not end within data or is
// longer.
func Varint(data []byte, i int) (v uint64, next int, ok bool) {
	for shift := uint(0); shift < 64; shift += 7 {
		if i >= len(data) {
			return 0, 0, false
		}
		b := data[i]
		i++
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v, i, true
		}
	}
	return 0, 0, false
}

// next reads the field at data[i:]. ok is false where the generated code
// would fail (a tag of field 0, a truncated field, a negative length) or
// where it would read a group or an unknown wire type: such data is left
// to it.
func next(data []byte, i int) (f field, ok bool) {
	tag, j, ok := Varint(data, i)
	if !ok {
		return f, false
	}
	f = field{num: int(int32(tag >> 3)), wire: int(tag & 7), start: i}
	if f.num <= 0 {
		return f, false
	}
	switch f.wire {
	case wireVarint:
		if _, j, ok = Varint(data, j); !ok {
			return f, false
		}
	case wireFixed64:
		j += 8
	case wireFixed32:
		j += 4
	case wireBytes:
		var n uint64
		if n, j, ok = Varint(data, j); !ok || int(n) < 0 || j+int(n) < 0 {
			return f, false
		}
		f.body = data[j:min(j+int(n), len(data))]
		j += int(n)
	default:
		return f, false
	}
	if j > len(data) {
		return f, false
	}
	f.end = j
	return f, true
}

// schema is the wire type a message's known fields must have, and for
// those that are messages the schema of their contents; fields it does
// not name are skipped, as unknown fields are.
type schema map[int]kind

type kind struct {
	wire int
	sub  schema
}

// valid says whether the generated Unmarshal of a message of schema s
// would accept data: only its structure decides that for the messages
// checked here (no field of theirs is an enum or a map, or checks UTF-8).
func valid(data []byte, s schema) bool {
	for i := 0; i < len(data); {
		f, ok := next(data, i)
		if !ok {
			return false
		}
		if k, known := s[f.num]; known {
			if f.wire != k.wire || (k.sub != nil && !valid(f.body, k.sub)) {
				return false
			}
		}
		i = f.end
	}
	return true
}

// managedFieldsEntry is metav1.ManagedFieldsEntry's schema: manager,
// operation, apiVersion, time (a Timestamp: seconds and nanos), fieldsType,
// fieldsV1 (its raw bytes) and subresource.
var managedFieldsEntry = schema{
	1: {wire: wireBytes},
	2: {wire: wireBytes},
	3: {wire: wireBytes},
	4: {wire: wireBytes, sub: schema{1: {wire: wireVarint}, 2: {wire: wireVarint}}},
	6: {wire: wireBytes},
	7: {wire: wireBytes, sub: schema{1: {wire: wireBytes}}},
	8: {wire: wireBytes},
}
