package cachetest

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// watchContentType is the media type of a JSON watch stream.
const watchContentType = "application/json;stream=watch"

// watch streams the core's watch as kube-apiserver streams one: a refused
// watch is an error status; an accepted one is a 200 whose headers are
// flushed at once, followed by one JSON watch event per line
// ({"type":...,"object":...}, ERROR events carrying a metav1.Status), each
// flushed as it is written (a WatchList stream compressed whole, if the
// server compresses: see Options.DisableCompression). The response ends
// when the core's watch ends (its timeout, CloseWatches, an ERROR event,
// Close). When the client goes
// away, the request's context, which the core's watch was opened with,
// ends it, and the deferred Stop releases it in any case.
func (q *resourceRequest) watch(opts metav1.ListOptions) {
	wi, err := q.res.WatchWithContext(q.r.Context(), opts)
	if err != nil {
		q.fail(err)
		return
	}
	defer wi.Stop()
	out := &eventWriter{w: q.w, rc: http.NewResponseController(q.w)}
	q.w.Header().Set("Content-Type", watchContentType)
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents && q.h.compresses(q.r, -1) {
		markGzip(q.w)
		out.zw, _ = gzip.NewWriterLevel(q.w, gzip.BestSpeed) // a valid level
		defer out.zw.Close()                                 // the trailer, if the client is still there
	}
	q.w.WriteHeader(http.StatusOK)
	if out.rc.Flush() != nil {
		return
	}
	for {
		select {
		case ev, ok := <-wi.ResultChan():
			if !ok || !q.writeEvent(out, ev) {
				return
			}
		case <-q.r.Context().Done():
			return
		}
	}
}

// eventWriter writes a watch stream's events, through zw if the stream is
// compressed.
type eventWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
	zw *gzip.Writer
}

// write writes line and flushes it to the client (through the
// compressor's flush first).
func (e *eventWriter) write(line []byte) bool {
	if e.zw == nil {
		_, err := e.w.Write(line)
		return err == nil && e.rc.Flush() == nil
	}
	if _, err := e.zw.Write(line); err != nil {
		return false
	}
	return e.zw.Flush() == nil && e.rc.Flush() == nil
}

// writeEvent writes and flushes one event; false if the client is gone or
// the event could not be encoded (the stream then ends with an ERROR).
func (q *resourceRequest) writeEvent(out *eventWriter, ev watch.Event) bool {
	line, err := encodeEvent(ev, q.kinds)
	ok := err == nil
	if !ok {
		status := apierrors.NewInternalError(fmt.Errorf("cachetest: encoding a watch event: %w", err)).ErrStatus
		if line, err = encodeEvent(watch.Event{Type: watch.Error, Object: &status}, q.kinds); err != nil {
			return false
		}
	}
	return out.write(line) && ok
}

// encodeEvent renders ev as one line of a JSON watch stream. ev.Object
// must be the caller's own copy (the core's events are).
func encodeEvent(ev watch.Event, kinds wire) ([]byte, error) {
	gvk := kinds.obj
	if ev.Type == watch.Error {
		gvk = statusKind
	}
	obj, err := encode(ev.Object, gvk)
	if err != nil {
		return nil, err
	}
	line, err := json.Marshal(&metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: obj}})
	if err != nil {
		return nil, err
	}
	return append(line, '\n'), nil
}
