package watchdecode

import (
	"io"

	"k8s.io/apimachinery/pkg/watch"
)

// job is one frame, from the moment a worker cuts it to its delivery, or
// the reader's last job (last): what it read and did not cut.
type job struct {
	raw   []byte   // the stream from the previous frame's end to this one's
	skip  int      // bytes of raw before the frame's payload
	st    *streams // the stream's decoders
	chunk *chunk   // the buffer raw is a slice of (nil for the last job)

	ev  watch.Event // set by the worker that cut the frame
	err error

	last    bool  // raw is all the reader read and did not cut
	readErr error // last: the body's error, nil if the rest is still to read

	// holdsPlace: the last job of its batch, which holds the batch's
	// place in the window until delivered.
	holdsPlace bool

	// initial: an ADDED event of the stream's initial run of them, which
	// Options.Held may be asked about.
	initial bool

	done bool // decoded (guarded by pipeline.mu, as next is)
	next *job // the next frame in stream order
}

// reader reads the body and cuts it into frames. It is used by one
// worker at a time: the holder of the pipeline's reader token.
type reader struct {
	body  io.Reader
	d     *Decoders
	st    *streams // the stream's decoders, once known (declared or sniffed)
	split splitter // nil: the reader does not cut the stream's media type
	pool  chunks   // the buffers
	c     *chunk   // the current buffer (nil before the first read)
	buf   []byte   // c.buf as read so far; buf[len(buf):cap(buf)] is free
	start int      // buf[start:] is not cut yet
	from  int      // buf[start:start+from] was scanned without finding a frame
	need  int      // the length of buf[start:] the next frame needs, if known
	bad   bool     // buf[start:] does not begin with a frame the splitter takes
	err   error    // the body's error, once a Read returned one
	over  bool     // the reader is done: its last job is cut, or a worker took over
	// initial: every frame cut so far is an ADDED event (set at the
	// start when Options.Held is; see markInitial).
	initial bool
}

// cut returns the next frame, reading the body as needed (and blocking
// while it is idle), or the last job: at the body's end or error (after
// the frames before it), at what the splitter does not take, or if the
// reader does not cut the media type. After Stop the body's Read fails,
// so cut returns.
func (r *reader) cut() *job {
	for {
		if j := r.frame(); j != nil {
			return j
		}
		if r.err != nil || r.bad || (r.st != nil && r.split == nil) {
			r.over = true
			return &job{raw: r.buf[r.start:], st: r.st, last: true, readErr: r.err}
		}
		r.fill()
	}
}

// frame cuts the next frame of buf[start:], if it holds a whole one.
func (r *reader) frame() *job {
	if r.split == nil || r.bad {
		return nil
	}
	c := r.split.next(r.buf[r.start:], r.from)
	if c.end == 0 {
		r.from, r.need, r.bad = len(r.buf)-r.start, c.need, c.bad
		return nil
	}
	end := r.start + c.end
	j := &job{raw: r.buf[r.start:end:end], skip: c.skip, st: r.st, chunk: r.c}
	r.c.refs.Add(1)
	r.start, r.from, r.need = end, 0, 0
	r.markInitial(j, c.commas)
	return j
}

// markInitial marks j as one of the stream's initial ADDED events, or
// ends that run: at the first frame that is not an ADDED event, in
// protobuf a WatchEvent, in JSON an object of the two members
// kube-apiserver writes (see addedObject), of which commas are the
// commas between members.
func (r *reader) markInitial(j *job, commas int) {
	if !r.initial {
		return
	}
	switch r.st.framing {
	case framingLength:
		typ, _, ok := watchEventFields(j.raw[j.skip:])
		j.initial = ok && typ == string(watch.Added)
	case framingJSON:
		_, ok := addedObject(j.raw[j.skip:])
		j.initial = ok && commas == 1
	}
	r.initial = j.initial
}

// fill reads once into the buffer's free part (making it first), and
// sniffs the media type from the first byte if it was not declared.
func (r *reader) fill() {
	if len(r.buf) == cap(r.buf) {
		r.move()
	}
	n, err := r.body.Read(r.buf[len(r.buf):cap(r.buf)])
	r.buf, r.err = r.buf[:len(r.buf)+n], err
	if r.st == nil && (len(r.buf) > 0 || err != nil) {
		r.use(r.d.sniff(r.buf))
	}
}

// move moves what is not cut yet to a new buffer, large enough for the
// next frame if its length is known, and releases the old one.
func (r *reader) move() {
	rest := r.buf[r.start:]
	c := r.pool.get(max(r.need, 2*len(rest)))
	r.buf, r.start = append(c.buf, rest...), 0
	if r.c != nil {
		r.pool.release(r.c)
	}
	r.c = c
}

// use sets the stream's decoders and the splitter of their media type.
func (r *reader) use(st *streams) {
	r.st = st
	switch st.framing {
	case framingJSON:
		r.split = &jsonFrames{}
	case framingLength:
		r.split = lengthFrames{}
	}
}

// rest hands the reader over to a worker that decodes the rest of the
// stream itself: what was read and not cut, then err (nil: read on from
// the body).
func (r *reader) rest() ([]byte, error) {
	r.over = true
	return r.buf[r.start:], r.err
}
