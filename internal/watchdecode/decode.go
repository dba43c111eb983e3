package watchdecode

import (
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	restwatch "k8s.io/client-go/rest/watch"
)

// frameDecoder is client-go's chain over one frame at a time: the
// streaming decoder and rest/watch's Decoder, on a frame reader that
// returns the frame the reader cut, as the framer's reader returns it.
// Each worker has its own. A protobuf frame of the usual shape is decoded
// by fast instead, when the chain is a clientset's (protofast.go); a JSON
// stream's initial ADDED events may be answered for by json
// (jsonheld.go).
type frameDecoder struct {
	src  frameSource
	dec  *restwatch.Decoder
	fast *protoFast // nil: every frame goes through the chain
	json *jsonHeld  // nil: not a JSON stream
}

// newFrameDecoder returns a frame decoder of st; noManagedFields lets its
// fast decoding leave managedFields out (see Options).
func newFrameDecoder(st *streams, noManagedFields bool) *frameDecoder {
	fd := &frameDecoder{fast: newProtoFast(st, noManagedFields)}
	if st.framing == framingJSON {
		fd.json = newJSONHeld()
	}
	fd.dec = restwatch.NewDecoder(streaming.NewDecoder(&fd.src, st.events), st.objects)
	return fd
}

// decode decodes the event of frame, the payload of one frame.
func (fd *frameDecoder) decode(frame []byte) (watch.Event, error) {
	ev, _, err := fd.decodeHeld(frame, nil)
	return ev, err
}

// decodeHeld is decode, except that with held set (an initial ADDED
// event's frame) an event it answers for is not decoded (standIn: its
// object is held's).
func (fd *frameDecoder) decodeHeld(frame []byte, held heldFunc) (ev watch.Event, standIn bool, err error) {
	var learn *typeKey
	switch {
	case fd.fast != nil:
		var ok bool
		if ev, learn, standIn, ok = fd.fast.decode(frame, held); ok {
			return ev, standIn, nil
		}
	case fd.json != nil && held != nil:
		if ev, learn, standIn = fd.json.standIn(frame, held); standIn {
			return ev, true, nil
		}
	}
	fd.src.frame = frame
	typ, obj, err := fd.dec.Decode()
	fd.src.frame = nil
	if err == nil && learn != nil {
		if fd.fast != nil {
			fd.fast.learnType(*learn, obj)
		} else {
			fd.json.learn(*learn, obj)
		}
	}
	return watch.Event{Type: typ, Object: obj}, false, err
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

// decodeJob decodes j's frame with fd and runs Item on its object; false
// if that failed (j.err is set). A panic fails the frame too: the
// delivering worker then decodes it again with client-go's chain, and
// panics there, as client-go's receive goroutine would (under
// HandleCrash).
func (w *watcher) decodeJob(fd *frameDecoder, j *job) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			j.err = fmt.Errorf("watchdecode: a worker panicked: %v", r)
			ok = false
		}
	}()
	var held heldFunc
	if j.initial {
		held = w.o.Held
	}
	var standIn bool
	j.ev, standIn, j.err = fd.decodeHeld(j.raw[j.skip:], held)
	if j.err != nil {
		return false
	}
	if w.o.Item != nil && !standIn {
		w.o.Item(j.ev.Object)
	}
	return true
}
