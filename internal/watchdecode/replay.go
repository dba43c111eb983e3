package watchdecode

import (
	"errors"
	"io"
)

// errStopped is what a listReader returns once the watcher is stopped
// while it waits for the reader's token.
var errStopped = errors.New("watchdecode: the watch was stopped")

// replayReader is the stream as client-go's chain reads it on one
// goroutine: cur, then err if set, else the body.
type replayReader struct {
	cur  []byte
	err  error
	body io.Reader
}

func (r *replayReader) Read(p []byte) (int, error) {
	if len(r.cur) > 0 {
		n := copy(p, r.cur)
		r.cur = r.cur[n:]
		return n, nil
	}
	if r.err != nil {
		return 0, r.err
	}
	return r.body.Read(p)
}

// Close does nothing: the watcher closes the body (shut).
func (r *replayReader) Close() error { return nil }

// listReader is the stream from a frame of the pipeline's list on, as
// client-go's chain reads it when a worker takes the stream over: the
// raw bytes of that frame and of every frame after it in the list; at
// the reader's last job, what it held and the body's error (or the body);
// at the list's end, once it has the reader's token (and no worker cuts
// any more), what the reader read and did not cut, then likewise. Read by
// the worker that took the stream over only.
type listReader struct {
	p     *pipeline // its list and reader (whose body field never changes)
	j     *job      // the frame cur is the rest of; nil once in the tail
	cur   []byte    // bytes to return first
	owner bool      // it holds the reader's token
	tail  replayReader
}

func (l *listReader) Read(b []byte) (int, error) {
	for len(l.cur) == 0 && l.j != nil {
		if !l.advance() {
			return 0, errStopped
		}
	}
	if len(l.cur) > 0 {
		n := copy(b, l.cur)
		l.cur = l.cur[n:]
		return n, nil
	}
	return l.tail.Read(b)
}

// advance moves cur on to the next bytes of the stream; false if the
// watcher was stopped while it waited for the reader's token.
func (l *listReader) advance() bool {
	switch next := l.p.next(l.j); {
	case l.j.last:
		l.j, l.tail = nil, replayReader{err: l.j.readErr, body: l.p.r.body}
	case next != nil:
		l.j, l.cur = next, next.raw
	case !l.owner:
		select {
		case <-l.p.readTok:
			l.owner = true
		case <-l.p.w.done:
			return false
		}
	default:
		raw, err := l.p.r.rest()
		l.j, l.cur, l.tail = nil, raw, replayReader{err: err, body: l.p.r.body}
	}
	return true
}

// Close does nothing: the watcher closes the body (shut).
func (l *listReader) Close() error { return nil }
