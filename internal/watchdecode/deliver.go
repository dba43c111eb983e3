package watchdecode

import (
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	restwatch "k8s.io/client-go/rest/watch"
)

// decodeFrames is a worker goroutine: it decodes the frames of the work
// queue, one at a time, with a decoder chain of its own, until the reader
// closes the queue or Stop. After a halt it only marks frames ready.
func (w *watcher) decodeFrames() {
	defer w.wg.Done()
	var fd *frameDecoder
	for {
		var j *job
		var ok bool
		select {
		case j, ok = <-w.work:
			if !ok {
				return
			}
		case <-w.done:
			return
		}
		if !w.halted() {
			if fd == nil {
				fd = newFrameDecoder(w.st)
			}
			if !w.decodeJob(fd, j) {
				fd = nil // a streaming decoder may be left mid-frame
			}
		}
		close(j.ready)
	}
}

// decodeJob decodes j's frame and runs Item on its object; false if it
// failed. A panic fails the frame too: the deliverer then decodes it
// again with client-go's chain, and panics on its own goroutine, as
// client-go's receive goroutine would (under HandleCrash).
func (w *watcher) decodeJob(fd *frameDecoder, j *job) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			j.err = fmt.Errorf("watchdecode: a worker panicked: %v", r)
			ok = false
		}
	}()
	j.ev, j.err = fd.decode(j.raw[j.skip:])
	if j.err != nil {
		return false
	}
	if w.o.Item != nil {
		w.o.Item(j.ev.Object)
	}
	return true
}

func (w *watcher) halted() bool {
	select {
	case <-w.halt:
		return true
	default:
		return false
	}
}

// deliver is the delivering goroutine of a watcher with Workers > 1: it
// takes the frames in stream order and sends each one's event once it is
// decoded. At the reader's hand-over, or at a frame a worker could not
// decode (it then halts the reader), it decodes the rest of the stream
// with client-go's chain, from the start of that frame.
func (w *watcher) deliver() {
	defer utilruntime.HandleCrashWithLogger(w.o.Logger)
	defer w.finish()
	for {
		var j *job
		select {
		case j = <-w.order:
		case <-w.done:
			return
		}
		if j.last {
			w.decodeAll(w.st, &replayReader{w: w, cur: j.raw, tail: true, err: j.readErr, body: w.body})
			return
		}
		select {
		case <-j.ready:
		case <-w.done:
			return
		}
		if j.err != nil {
			close(w.halt)
			w.decodeAll(w.st, &replayReader{w: w, cur: j.raw, body: w.body})
			return
		}
		if !w.send(j.ev) {
			return
		}
	}
}

// frameDecoder is client-go's chain over one frame at a time: the
// streaming decoder and rest/watch's Decoder, on a frame reader that
// returns the frame the reader cut, as the framer's reader returns it.
type frameDecoder struct {
	src frameSource
	dec *restwatch.Decoder
}

func newFrameDecoder(st *streams) *frameDecoder {
	fd := &frameDecoder{}
	fd.dec = restwatch.NewDecoder(streaming.NewDecoder(&fd.src, st.events), st.objects)
	return fd
}

// decode decodes the event of frame, the payload of one frame.
func (fd *frameDecoder) decode(frame []byte) (watch.Event, error) {
	fd.src.frame = frame
	typ, obj, err := fd.dec.Decode()
	fd.src.frame = nil
	return watch.Event{Type: typ, Object: obj}, err
}

// frameSource is a frame reader over one frame: a Read returns the next
// part of it, with io.ErrShortBuffer while some remains, as the framers'
// readers do.
type frameSource struct{ frame []byte }

func (s *frameSource) Read(p []byte) (int, error) {
	n := copy(p, s.frame)
	s.frame = s.frame[n:]
	if len(s.frame) > 0 {
		return n, io.ErrShortBuffer
	}
	return n, nil
}

func (s *frameSource) Close() error { return nil }
