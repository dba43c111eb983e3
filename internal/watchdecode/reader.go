package watchdecode

import "k8s.io/apimachinery/pkg/watch"

// chunkSize is the size of the reader's buffers. Frames are slices of
// them: a buffer is never written again once a frame refers to it, and is
// freed when its frames are delivered.
const chunkSize = 64 << 10

// job is one frame on its way from the reader to the deliverer, or the
// reader's hand-over (last).
type job struct {
	raw  []byte // the stream from the previous frame's end to this one's
	skip int    // bytes of raw before the frame's payload

	ready chan struct{} // closed by the worker once ev and err are set
	ev    watch.Event
	err   error

	last    bool  // the reader's last job: raw is all it read and did not queue
	readErr error // last: the body's error, nil if the rest is still to read
}

// reader is the reader goroutine's state.
type reader struct {
	w     *watcher
	split splitter
	buf   []byte // the current buffer; buf[len(buf):cap(buf)] is free
	start int    // buf[start:] is not queued yet
	from  int    // buf[start:start+from] was scanned without finding a frame
	need  int    // the length of buf[start:] the next frame needs, if known
}

// read is the reader goroutine: it reads the body, queues each frame the
// moment it is whole (in order, then to the workers), and ends with a
// hand-over to the deliverer of what it read and did not queue, when the
// body ends or fails, it finds what it does not split, or the deliverer
// halts it. On Stop it just returns. It closes work; st is the declared
// media type's streams, nil to sniff.
func (w *watcher) read(st *streams) {
	defer w.wg.Done()
	defer close(w.work)
	r := &reader{w: w, buf: make([]byte, 0, chunkSize)}
	if st != nil {
		r.use(st)
	}
	for {
		select {
		case <-w.halt:
			r.handOver(nil)
			return
		default:
		}
		r.room()
		n, err := w.body.Read(r.buf[len(r.buf):cap(r.buf)])
		r.buf = r.buf[:len(r.buf)+n]
		if w.st == nil {
			if len(r.buf) == 0 && err == nil {
				continue
			}
			r.use(w.d.sniff(r.buf))
		}
		if !r.queueFrames() || err != nil {
			r.handOver(err)
			return
		}
	}
}

// use sets the stream's decoders, for the workers and the deliverer (who
// read w.st after taking a job: the reader sets it before its first), and
// the splitter (none if the reader does not split the media type).
func (r *reader) use(st *streams) {
	r.w.st = st
	switch st.framing {
	case framingJSON:
		r.split = &jsonFrames{}
	case framingLength:
		r.split = lengthFrames{}
	default:
		r.split = nil
	}
}

// room makes the buffer's free part non-empty, moving what is not queued
// to a new buffer (large enough for the next frame, if known).
func (r *reader) room() {
	if len(r.buf) < cap(r.buf) {
		return
	}
	rest := r.buf[r.start:]
	size := max(chunkSize, r.need, 2*len(rest))
	buf := make([]byte, len(rest), size)
	copy(buf, rest)
	r.buf, r.start = buf, 0
}

// queueFrames queues the whole frames of buf[start:]; false when the
// reader must hand over or stop: a bad frame, no splitter, Stop, halt.
func (r *reader) queueFrames() bool {
	if r.split == nil {
		return false
	}
	for {
		c := r.split.next(r.buf[r.start:], r.from)
		switch {
		case c.bad:
			return false
		case c.end == 0:
			r.from, r.need = len(r.buf)-r.start, c.need
			return true
		}
		end := r.start + c.end
		j := &job{raw: r.buf[r.start:end:end], skip: c.skip, ready: make(chan struct{})}
		select {
		case r.w.order <- j:
		case <-r.w.done:
			return false
		case <-r.w.halt:
			return false
		}
		r.start, r.from, r.need = end, 0, 0
		select {
		case r.w.work <- j:
		case <-r.w.done:
			return false
		case <-r.w.halt:
			return false
		}
	}
}

// handOver queues the reader's last job: buf[start:], then err (nil: the
// rest of the body). The deliverer decodes from there with client-go's
// chain (w.st, which the reader has set by then). After Stop nothing
// takes the job.
func (r *reader) handOver(err error) {
	j := &job{raw: r.buf[r.start:], last: true, readErr: err}
	select {
	case r.w.order <- j:
	case <-r.w.done:
	}
}
