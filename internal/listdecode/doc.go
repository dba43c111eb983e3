// Package listdecode decodes one LIST response body into exactly the list
// object (or the error) that client-go's client would return for it — a
// clientset's, the dynamic client's or the metadata client's — while the
// body is still arriving, with the items decoded on several goroutines.
//
// client-go reads the whole body, then decodes it on one goroutine. Here a
// small scanner on the calling goroutine finds each item's bytes (in JSON:
// strings, escapes and nesting; in protobuf: tags and lengths) and hands
// them to workers, which decode each item as client-go's list decoder
// decodes that element; what is left of the body (the envelope: kind,
// apiVersion, metadata, an empty items array) is decoded by the client's
// own decoder, and the decoded items become its Items, in order. Bodies
// that are not lists of the expected kind (a Status, another kind, CBOR,
// anything unusual before the items) are read whole and decoded by the
// client's decoder, with the client's Result.Into/Get semantics.
//
// Memory stays bounded: at most 3×Workers items are in flight, an item's
// bytes are a slice of the read buffer it arrived in (copied only when it
// spans two), and a buffer is garbage once its items are decoded.
package listdecode
