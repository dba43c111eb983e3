// Package inflate moves the inflating of a compressed response body off
// the goroutines that split and decode it.
//
// When client-go's transport asked for gzip itself (its default, unless
// rest.Config.DisableCompression is set) and the server compressed the
// response, net/http hands over a body that inflates as it is read: on the
// reader's goroutine, in front of everything that reader does. Ahead puts
// such a body behind a stage of its own, a goroutine that reads (and so
// inflates) ahead of the consumer into a bounded set of buffers, so that
// inflating overlaps splitting and decoding wherever a core is free; at
// GOMAXPROCS 1, where nothing could overlap, it leaves the body as it is.
//
// The stage changes nothing else: the bytes and the errors the consumer
// reads are those the body gives, in the same order, the last error
// included (a corrupt or truncated stream fails exactly as it does when
// read directly, with net/http's own inflater); the request is untouched,
// so who asks for compression stays the client's configuration.
package inflate

import (
	"io"
	"reflect"
	"runtime"
	"sync"
)

// bufSize is the size of each buffer the stage reads into, and buffers how
// many it has: at most buffers*bufSize inflated bytes are ahead of the
// consumer.
const (
	bufSize = 64 << 10
	buffers = 8
)

// inflating are the types of the bodies net/http returns when it asked for
// gzip itself and inflates the response as it is read: HTTP/1's, HTTP/2's
// as bundled in net/http, and golang.org/x/net/http2's.
var inflating = map[string]bool{
	"*http.gzipReader":      true,
	"*http.http2gzipReader": true,
	"*http2.gzipReader":     true,
}

// Compressed says whether body is a response body that net/http inflates
// as it is read (the server gzipped it for a transport that asked).
func Compressed(body io.Reader) bool {
	return body != nil && inflating[reflect.TypeOf(body).String()]
}

// Ahead returns body behind a stage of its own (see New) if it is
// Compressed and GOMAXPROCS is at least 2, else body itself: on one
// processor the stage overlaps nothing and would only add a copy of every
// byte and a goroutine switch per buffer (a whole LIST of 100,000 Pods
// took about 0.15 s more CPU so).
func Ahead(body io.ReadCloser) io.ReadCloser {
	return ahead(body, runtime.GOMAXPROCS(0))
}

// ahead is Ahead with procs processors.
func ahead(body io.ReadCloser, procs int) io.ReadCloser {
	if procs < 2 || !Compressed(body) {
		return body
	}
	return New(body)
}

// chunk is what one Read of the body gave: data (a prefix of buf, which
// the stage owns) and the error, if any.
type chunk struct {
	buf  []byte
	data []byte
	err  error
}

// Reader reads its body on a goroutine of its own, ahead of its consumer,
// into at most `buffers` buffers. Its Read gives the body's bytes and
// errors in order; it must not be called concurrently with itself. Close
// may be called from any goroutine, at any time, also while Read blocks.
type Reader struct {
	body   io.ReadCloser
	ready  chan chunk    // filled buffers, in order
	free   chan []byte   // buffers back from the consumer (nil: one not made yet)
	done   chan struct{} // closed by Close
	exited chan struct{} // closed when the reading goroutine has returned
	once   sync.Once

	cur  chunk // the chunk being consumed
	off  int   // cur.data[:off] has been consumed
	rerr error // the body's error, once every byte before it was consumed
}

// New starts reading body ahead on a goroutine of its own and returns the
// Reader that gives what it read. The goroutine ends at the body's first
// error (io.EOF included) or at Close, which closes body and waits for it.
func New(body io.ReadCloser) *Reader {
	r := &Reader{
		body:   body,
		ready:  make(chan chunk, buffers),
		free:   make(chan []byte, buffers),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	for range buffers {
		r.free <- nil
	}
	go r.run()
	return r
}

// run reads the body into free buffers and hands them over, until the
// body's first error or Close.
func (r *Reader) run() {
	defer close(r.exited)
	for {
		var buf []byte
		select {
		case buf = <-r.free:
		case <-r.done:
			return
		}
		if buf == nil {
			buf = make([]byte, bufSize)
		}
		n, err := r.body.Read(buf)
		for n == 0 && err == nil {
			n, err = r.body.Read(buf)
		}
		select {
		case r.ready <- chunk{buf: buf, data: buf[:n], err: err}:
		case <-r.done:
			return
		}
		if err != nil {
			return
		}
	}
}

// Read gives the next bytes of the body, or its error once every byte
// before it was given. After Close it gives what the closed body's Read
// gives.
func (r *Reader) Read(p []byte) (int, error) {
	if r.closed() {
		return r.afterClose(p)
	}
	if len(p) == 0 {
		return 0, nil
	}
	for r.off == len(r.cur.data) {
		if r.rerr != nil {
			return 0, r.rerr
		}
		if !r.next() {
			return r.afterClose(p)
		}
	}
	n := copy(p, r.cur.data[r.off:])
	r.off += n
	return n, nil
}

// closed says whether Close was called.
func (r *Reader) closed() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// afterClose is a Read after Close: the closed body's own answer, once
// the reading goroutine has ended (the body has one reader at a time).
func (r *Reader) afterClose(p []byte) (int, error) {
	<-r.exited
	return r.body.Read(p)
}

// next gives the consumed chunk's buffer back and takes the next chunk;
// false if Close came first. A chunk's error is kept for after its data.
func (r *Reader) next() bool {
	if r.cur.buf != nil {
		r.free <- r.cur.buf // never blocks: free has room for every buffer
	}
	r.cur, r.off = chunk{}, 0
	if r.closed() {
		return false
	}
	select {
	case c := <-r.ready:
		r.cur, r.rerr = c, c.err
		return true
	case <-r.done:
		return false
	}
}

// Close closes the body, which makes a Read of the reading goroutine in
// progress return, and waits for that goroutine to end. It returns the
// body's Close error (nil on later calls).
func (r *Reader) Close() error {
	var err error
	r.once.Do(func() {
		err = r.body.Close() // before done: a Read that sees done finds the body closed
		close(r.done)
		<-r.exited
	})
	return err
}
