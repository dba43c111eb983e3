package watchdecode

import (
	"fmt"
	"io"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// sequential is the one goroutine of a watcher with Workers <= 0 (or a
// media type the reader does not cut): client-go's decoding of the whole
// stream. st is the declared media type's streams, nil if the stream's
// first byte is to tell; err, a declared media type the client cannot
// decode (the stream then ends with its ERROR event).
func (w *watcher) sequential(st *streams, err error) {
	defer utilruntime.HandleCrashWithLogger(w.o.Logger)
	defer w.closeResult()
	defer w.shut()
	if err != nil {
		w.ended(err)
		return
	}
	r := &replayReader{body: w.body}
	if st == nil {
		r.cur, r.err = w.first()
		st = w.d.sniff(r.cur)
	}
	w.decodeAll(st, r)
}

// first reads the body until it has a byte or an error.
func (w *watcher) first() ([]byte, error) {
	b := make([]byte, 512)
	for {
		n, err := w.body.Read(b)
		if n > 0 || err != nil {
			return b[:n], err
		}
	}
}

// decodeAll decodes the events of r with client-go's chain for st and
// delivers them until the stream ends, as client-go's StreamWatcher does.
// It runs on the delivering goroutine.
func (w *watcher) decodeAll(st *streams, r io.ReadCloser) {
	dec := st.chain(r)
	for {
		typ, obj, err := dec.Decode()
		if err != nil {
			w.ended(err)
			return
		}
		if w.o.Item != nil {
			w.o.Item(obj)
		}
		if !w.send(watch.Event{Type: typ, Object: obj}) {
			return
		}
	}
}

// ended ends the stream on err as client-go's StreamWatcher does: quietly
// (logged) on the end of the body, a connection closed or timed out;
// otherwise with an ERROR event made by the rest client's reporter.
func (w *watcher) ended(err error) {
	switch {
	case err == io.EOF:
	case err == io.ErrUnexpectedEOF:
		w.o.Logger.V(1).Info("Watch stream ended inside an event", "err", err)
	case utilnet.IsProbableEOF(err) || utilnet.IsTimeout(err):
		w.o.Logger.V(5).Info("Watch stream closed", "err", err)
	default:
		err = fmt.Errorf("unable to decode an event from the watch stream: %v", err)
		w.send(watch.Event{Type: watch.Error, Object: reporter.AsObject(err)})
	}
}
