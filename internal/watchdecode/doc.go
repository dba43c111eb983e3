// Package watchdecode is a watch.Interface over the body of a watch
// response that decodes its frames on several goroutines and delivers the
// events in stream order: the events, and the ending, that client-go's
// rest.Request.Watch delivers for the same bytes.
//
// # Goroutines
//
// With Options.Workers <= 1 a watcher runs one goroutine, as client-go's
// StreamWatcher does: it reads, decodes (with the client's own decoder
// chain: framer, streaming decoder, rest/watch's Decoder) and delivers.
//
// With Workers = N >= 2 it runs N+2: a reader, which owns the body, splits
// it into frames (JSON objects; 4-byte length-prefixed protobuf frames)
// and hands each one, the moment it is complete, to the workers and to
// the deliverer's queue; N workers, each decoding one frame at a time with
// a decoder chain of its own; and the deliverer, which takes the frames in
// stream order, waits for each one's decoding and sends its event on the
// result channel. At most 2N frames are queued past the reader: a slow
// consumer holds the reader back (and the reading of the connection).
// Nothing waits for a batch to fill: an event is sent as soon as it and
// every event before it are decoded.
//
// # Fallback to client-go's decoding
//
// Whatever the workers cannot decode, and whatever the reader cannot split
// (anything but JSON whitespace before an object, a frame above
// maxFrame, the end of the body or a read error), ends the parallel
// decoding: from the start of that frame, the deliverer decodes the rest of
// the stream exactly as client-go does, over the same bytes, on its own
// goroutine, and ends the stream as client-go's StreamWatcher would: quietly
// on io.EOF, io.ErrUnexpectedEOF and errors net.IsProbableEOF or
// net.IsTimeout holds for; after an ERROR event made by the rest client's
// reporter (a 500 Status, cause ClientWatchDecoding) otherwise. So a
// malformed or truncated stream, a stream that ends, and a connection
// closed mid-frame, end as they do with client-go.
//
// # Stop
//
// Stop closes the body (which must make a blocked Read return), then
// waits until every goroutine of the watcher has exited and the result
// channel is closed. Events not received by then are dropped. Stop is
// idempotent and may be called from any goroutine, concurrently with
// delivery, but not from Options.Item.
package watchdecode
