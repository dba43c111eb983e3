package protometa

// ObjectMeta's fields read by Identity.
const (
	nameField            = 1
	namespaceField       = 3
	resourceVersionField = 6
)

// Identity reads the namespace, name and resourceVersion of data, the
// protobuf bytes of an object of a type For accepts (its field 1 is its
// ObjectMeta), as its generated Unmarshal would set them: the last value
// of each field wins, across every field 1 of data (the generated code
// merges them). The slices alias data.
//
// ok is false when the generated code would refuse data for a reason
// seen here: a field of data, or of its metadata, that does not parse, a
// field 1 that is not length-delimited, or one of the three that is not.
// Nothing else is checked: bytes the generated code would refuse deeper
// in the metadata or elsewhere in the object are not noticed here.
func Identity(data []byte) (namespace, name, resourceVersion []byte, ok bool) {
	for i := 0; i < len(data); {
		f, ok := next(data, i)
		if !ok {
			return nil, nil, nil, false
		}
		i = f.end
		if f.num != metaField {
			continue
		}
		if f.wire != wireBytes || !identityIn(f.body, &namespace, &name, &resourceVersion) {
			return nil, nil, nil, false
		}
	}
	return namespace, name, resourceVersion, true
}

// identityIn sets, from meta (an ObjectMeta's bytes), each of the three
// fields it has; false if meta does not parse or one of them is not
// length-delimited.
func identityIn(meta []byte, namespace, name, resourceVersion *[]byte) bool {
	for i := 0; i < len(meta); {
		f, ok := next(meta, i)
		if !ok {
			return false
		}
		i = f.end
		var dst *[]byte
		switch f.num {
		case nameField:
			dst = name
		case namespaceField:
			dst = namespace
		case resourceVersionField:
			dst = resourceVersion
		default:
			continue
		}
		if f.wire != wireBytes {
			return false
		}
		*dst = f.body
	}
	return true
}
