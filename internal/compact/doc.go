// Package compact holds the mechanics of the compact store: an object
// turned into bytes (Codec) and the bytes made small (Squeezer).
//
// A Codec is chosen once per Go type (For). Kubernetes' own API types
// (the packages under k8s.io/api and k8s.io/apimachinery/pkg/apis) are
// held as their protobuf encoding, the very form kube-apiserver sends
// them in, with their TypeMeta's two strings in front; unstructured
// objects are held as CBOR, encoded as apimachinery's CBOR serializer
// encodes them. Other types have no Codec: the store keeps them decoded.
//
// Decoding what Encode returned gives an object reflect.DeepEqual to the
// encoded one for every object a server sends over protobuf, and for
// every unstructured object; a typed object decoded from JSON that
// carries an empty list or map (`[]`, `{}`) where protobuf has no way to
// say so comes back with a nil one, which apimachinery's semantic
// equality (and the API) treats as the same.
//
// A Squeezer compresses encodings with zstd, with a dictionary trained on
// the first objects it sees, so that records of a few kilobytes compress
// as well as a large body would. Both are safe for concurrent use.
package compact
