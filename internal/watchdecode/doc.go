// Package watchdecode is a watch.Interface over the body of a watch
// response that decodes its frames on several goroutines and delivers the
// events in stream order: the events, and the ending, that client-go's
// rest.Request.Watch delivers for the same bytes.
//
// # Goroutines
//
// With Options.Workers <= 0 a watcher runs one goroutine, as client-go's
// StreamWatcher does: it reads, decodes with the client's own decoder
// chain (framer, streaming decoder, rest/watch's Decoder) and delivers.
//
// With Workers = N >= 1 it runs N workers and nothing else. A worker
// takes the reader's token, cuts the next frame of the body (a JSON
// object; a 4-byte length-prefixed protobuf frame), reading as needed,
// appends it to the list of frames in stream order and gives the token
// back; decodes the frame with a decoder chain of its own (a clientset's
// protobuf frame of the usual shape without the chain's copies of its
// bytes, protofast.go); then, if the
// frame at the head of the list is decoded and no worker is delivering,
// it delivers the decoded frames at the head, in order, on the result
// channel. A frame is cut the moment it is whole, and its event sent as
// soon as it and every event before it are decoded: nothing waits for a
// batch. At most 2N frames are cut and not yet delivered: a slow consumer
// holds the workers back, and the reading of the connection with them.
// No goroutine the workers depend on has to wait for a processor while
// they decode, as a separate reader or deliverer woken by a worker would.
//
// # Fallback to client-go's decoding
//
// Whatever a worker cannot decode, and whatever the reader does not cut
// (anything but JSON whitespace before an object, a frame above maxFrame,
// a media type other than JSON and protobuf), and the end of the body or
// a read error, end the parallel decoding: when the delivering worker
// reaches that frame, it decodes the rest of the stream from its start
// exactly as client-go does, over the same bytes, and ends the stream as
// client-go's StreamWatcher would: quietly on io.EOF, io.ErrUnexpectedEOF
// and errors net.IsProbableEOF or net.IsTimeout holds for; after an ERROR
// event made by the rest client's reporter (a 500 Status, cause
// ClientWatchDecoding) otherwise. So a malformed or truncated stream, a
// stream that ends, and a connection closed mid-frame, end as they do
// with client-go. (A frame above maxFrame in a sound stream leaves the
// rest of that stream to one goroutine.)
//
// # Stop
//
// Stop closes the body (which must make a blocked Read return), then
// waits until every goroutine of the watcher has exited and the result
// channel is closed. Events not received by then are dropped. Stop is
// idempotent and may be called from any goroutine, concurrently with
// delivery, but not from Options.Item.
package watchdecode
