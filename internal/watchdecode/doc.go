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
// and behind it the whole frames already read (up to maxBatch in all,
// never reading for them), appends them to the list of frames in stream
// order and gives the token back; decodes them with a decoder chain of
// its own (a clientset's protobuf frame of the usual shape without the
// chain's copies of its bytes, protofast.go); then, after each, if the
// frame at the head of the list is decoded and no worker is delivering,
// it delivers the decoded frames at the head, in order, on the result
// channel, which buffers up to maxBatch events. A frame is cut the moment
// it is whole, and its event sent as soon as it and every event before it
// are decoded: nothing waits for a batch to fill. At most 2N×maxBatch
// frames are cut and not yet delivered, and maxBatch events buffered: a
// slow consumer holds the workers back, and the reading of the connection
// with them.
//
// Why batches and a buffer: a goroutine a worker wakes (a worker waiting
// for the reader's token, the consumer waiting for an event) becomes
// runnable on the waker's processor, and another processor takes it over
// only after a sleep the runtime means to be 3 µs, 50-80 µs under Linux's
// default timer slack: longer than a Pod takes to decode. Woken once per
// frame, the workers and the consumer took turns on one processor while
// the other idled (a 100,000-Pod WatchList used 1.0-1.3 of 2 cores
// outside garbage collection); woken once per batch, they do not. No
// goroutine the workers depend on has to wait for a processor while they
// decode, as a separate reader or deliverer woken by a worker would.
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
