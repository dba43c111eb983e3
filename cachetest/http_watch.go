package cachetest

import (
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
// flushed as it is written. The response ends when the core's watch ends
// (its timeout, CloseWatches, an ERROR event, Close). When the client goes
// away, the request's context, which the core's watch was opened with,
// ends it, and the deferred Stop releases it in any case.
func (q *resourceRequest) watch(opts metav1.ListOptions) {
	wi, err := q.res.WatchWithContext(q.r.Context(), opts)
	if err != nil {
		q.fail(err)
		return
	}
	defer wi.Stop()
	rc := http.NewResponseController(q.w)
	q.w.Header().Set("Content-Type", watchContentType)
	q.w.WriteHeader(http.StatusOK)
	if rc.Flush() != nil {
		return
	}
	for {
		select {
		case ev, ok := <-wi.ResultChan():
			if !ok || !q.writeEvent(rc, ev) {
				return
			}
		case <-q.r.Context().Done():
			return
		}
	}
}

// writeEvent writes and flushes one event; false if the client is gone or
// the event could not be encoded (the stream then ends with an ERROR).
func (q *resourceRequest) writeEvent(rc *http.ResponseController, ev watch.Event) bool {
	line, err := encodeEvent(ev, q.kinds)
	ok := err == nil
	if !ok {
		status := apierrors.NewInternalError(fmt.Errorf("cachetest: encoding a watch event: %w", err)).ErrStatus
		if line, err = encodeEvent(watch.Event{Type: watch.Error, Object: &status}, q.kinds); err != nil {
			return false
		}
	}
	if _, err := q.w.Write(line); err != nil {
		return false
	}
	return rc.Flush() == nil && ok
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
