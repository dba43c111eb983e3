package cachetest

import (
	"encoding/json"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// resourceRequest is one request about a resource, answered by the core's
// verb on a handle scoped to the path's namespace ("" for all namespaces
// or a cluster-scoped resource).
type resourceRequest struct {
	h     *httpServer
	w     http.ResponseWriter
	r     *http.Request
	res   *Resource
	kinds wire
	// name is the object the path names, if any.
	name string
}

func (q *resourceRequest) fail(err error) { q.h.writeError(q.w, q.r, err) }

// reply writes obj, a copy the request owns, as JSON of kind gvk.
func (q *resourceRequest) reply(code int, obj runtime.Object, gvk schema.GroupVersionKind) {
	writeJSON(q.w, code, obj, gvk)
}

// listOrWatch answers a GET on a collection (or, for a watch, on one
// object, which watches the collection filtered by metadata.name, as
// kube-apiserver does).
func (q *resourceRequest) listOrWatch() {
	var opts metav1.ListOptions
	if err := decodeQuery(q.r.URL.Query(), &opts); err != nil {
		q.fail(err)
		return
	}
	if q.name != "" {
		byName := fields.OneTermEqualSelector(fieldName, q.name).String()
		if opts.FieldSelector == "" {
			opts.FieldSelector = byName
		} else {
			opts.FieldSelector += "," + byName
		}
	}
	if opts.Watch {
		q.watch(opts)
		return
	}
	list, err := q.res.ListWithContext(q.r.Context(), opts)
	if err != nil {
		q.fail(err)
		return
	}
	q.replyList(list)
}

// replyList writes a LIST's answer, compressed as kube-apiserver
// compresses it (see compresses).
func (q *resourceRequest) replyList(list runtime.Object) {
	data, err := encode(list, q.kinds.list)
	if err != nil {
		q.fail(apierrors.NewInternalError(fmt.Errorf("cachetest: encoding the response: %w", err)))
		return
	}
	q.w.Header().Set("Content-Type", runtime.ContentTypeJSON)
	if q.h.compresses(q.r, len(data)) {
		data = gzipped(data)
		markGzip(q.w)
	}
	q.w.WriteHeader(http.StatusOK)
	_, _ = q.w.Write(data) // a client gone away is not the server's error
}

func (q *resourceRequest) get() {
	var opts metav1.GetOptions
	if err := decodeQuery(q.r.URL.Query(), &opts); err != nil {
		q.fail(err)
		return
	}
	obj, err := q.res.Get(q.r.Context(), "", q.name, opts)
	if err != nil {
		q.fail(err)
		return
	}
	q.reply(http.StatusOK, obj, q.kinds.obj)
}

// create answers 201 Created with the stored object.
func (q *resourceRequest) create() {
	var opts metav1.CreateOptions
	if err := decodeQuery(q.r.URL.Query(), &opts); err != nil {
		q.fail(err)
		return
	}
	obj, err := decodeBody(q.r, q.res.t, q.kinds.obj)
	if err != nil {
		q.fail(err)
		return
	}
	out, err := q.res.Create(q.r.Context(), obj, opts)
	if err != nil {
		q.fail(err)
		return
	}
	q.reply(http.StatusCreated, out, q.kinds.obj)
}

// update answers with the stored object. The body must name the object
// the URL names, as kube-apiserver requires.
func (q *resourceRequest) update() {
	var opts metav1.UpdateOptions
	if err := decodeQuery(q.r.URL.Query(), &opts); err != nil {
		q.fail(err)
		return
	}
	obj, err := decodeBody(q.r, q.res.t, q.kinds.obj)
	if err != nil {
		q.fail(err)
		return
	}
	if nameOf(obj) != q.name {
		q.fail(apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", nameOf(obj), q.name)))
		return
	}
	out, err := q.res.Update(q.r.Context(), obj, opts)
	if err != nil {
		q.fail(err)
		return
	}
	q.reply(http.StatusOK, out, q.kinds.obj)
}

// delete answers with a Success status naming the deleted object, as
// kube-apiserver does for resources that do not return the deleted object.
func (q *resourceRequest) delete() {
	opts, err := q.deleteOptions()
	if err != nil {
		q.fail(err)
		return
	}
	last, err := q.res.Delete(q.r.Context(), "", q.name, opts)
	if err != nil {
		q.fail(err)
		return
	}
	details := &metav1.StatusDetails{Name: q.name, Group: q.res.t.gr.Group, Kind: q.res.t.gr.Resource}
	if m, err := meta.Accessor(last); err == nil {
		details.UID = m.GetUID()
	}
	q.reply(http.StatusOK, &metav1.Status{Status: metav1.StatusSuccess, Code: http.StatusOK, Details: details}, statusKind)
}

// deleteCollection deletes what the query's selectors match and answers
// with a Success status.
func (q *resourceRequest) deleteCollection() {
	opts, err := q.deleteOptions()
	if err != nil {
		q.fail(err)
		return
	}
	var listOpts metav1.ListOptions
	if err := decodeQuery(q.r.URL.Query(), &listOpts); err != nil {
		q.fail(err)
		return
	}
	n, err := q.res.DeleteCollection(q.r.Context(), opts, listOpts)
	if err != nil {
		q.fail(err)
		return
	}
	q.reply(http.StatusOK, &metav1.Status{Status: metav1.StatusSuccess, Code: http.StatusOK,
		Message: fmt.Sprintf("deleted %d %s", n, q.res.t.gr)}, statusKind)
}

// deleteOptions reads DeleteOptions from the JSON body, or from the query
// when there is no body (kube-apiserver accepts both).
func (q *resourceRequest) deleteOptions() (metav1.DeleteOptions, error) {
	var opts metav1.DeleteOptions
	data, err := readBody(q.r)
	if err != nil {
		return opts, err
	}
	if len(data) == 0 {
		return opts, decodeQuery(q.r.URL.Query(), &opts)
	}
	if err := json.Unmarshal(data, &opts); err != nil {
		return opts, apierrors.NewBadRequest(fmt.Sprintf("cachetest: the request body is not valid DeleteOptions: %v", err))
	}
	return opts, nil
}

// writeJSON writes obj, which the caller owns, as JSON of kind gvk.
func writeJSON(w http.ResponseWriter, code int, obj runtime.Object, gvk schema.GroupVersionKind) {
	data, err := encode(obj, gvk)
	if err != nil {
		if _, isStatus := obj.(*metav1.Status); !isStatus {
			writeStatus(w, apierrors.NewInternalError(fmt.Errorf("cachetest: encoding the response: %w", err)).ErrStatus)
			return
		}
	}
	w.Header().Set("Content-Type", runtime.ContentTypeJSON)
	w.WriteHeader(code)
	_, _ = w.Write(data) // a client gone away is not the server's error
}

func nameOf(obj runtime.Object) string {
	if m, err := meta.Accessor(obj); err == nil {
		return m.GetName()
	}
	return ""
}
