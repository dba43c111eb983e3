package cachetest

import (
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// route is a request path about a resource, split as kube-apiserver
// splits it: /api/v1/[namespaces/{ns}/]{resource}[/{name}] for the core
// group, /apis/{group}/{version}/... for the others.
type route struct {
	gv        schema.GroupVersion
	namespace string
	// namespaced: the path named a namespace.
	namespaced bool
	resource   string
	name       string
}

// parseRoute splits a resource path; ok is false for paths that do not
// name a resource (discovery paths, subresources and anything unknown).
func parseRoute(path string) (route, bool) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	var rt route
	switch {
	case len(segs) >= 3 && segs[0] == "api":
		rt.gv = schema.GroupVersion{Version: segs[1]}
		segs = segs[2:]
	case len(segs) >= 4 && segs[0] == "apis":
		rt.gv = schema.GroupVersion{Group: segs[1], Version: segs[2]}
		segs = segs[3:]
	default:
		return rt, false
	}
	// "namespaces/{ns}/{resource}..." names a namespace; "namespaces" or
	// "namespaces/{name}" alone is the namespaces resource itself.
	if len(segs) >= 3 && segs[0] == "namespaces" {
		rt.namespace, rt.namespaced = segs[1], true
		segs = segs[2:]
	}
	if len(segs) > 2 {
		return rt, false
	}
	rt.resource = segs[0]
	if len(segs) == 2 {
		rt.name = segs[1]
	}
	bad := rt.gv.Version == "" || rt.resource == "" ||
		rt.namespaced && rt.namespace == "" || len(segs) == 2 && rt.name == ""
	return rt, !bad
}

// ServeHTTP answers one request. While the server is down after a refused
// connection, every request has its connection reset instead.
func (h *httpServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.enter()
	defer h.leave()
	if h.isDown() {
		resetConn(w)
		return
	}
	if serveHealth(w, r) {
		return
	}
	if !acceptsJSON(r.Header.Get("Accept")) {
		writeStatus(w, newStatusError(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable,
			"cachetest: only application/json is served; the request accepts "+r.Header.Get("Accept")).ErrStatus)
		return
	}
	if h.serveMisc(w, r) {
		return
	}
	rt, ok := parseRoute(r.URL.Path)
	if !ok {
		writeStatus(w, errNoRoute().ErrStatus)
		return
	}
	h.serveResource(w, r, rt)
}

// serveResource dispatches a request about a resource to its verb.
func (h *httpServer) serveResource(w http.ResponseWriter, r *http.Request, rt route) {
	t, kinds, err := h.typeFor(rt.gv, rt.resource)
	switch {
	case err != nil:
	case t.clusterScoped && rt.namespaced:
		err = errNoRoute()
	case !t.clusterScoped && !rt.namespaced && rt.name != "":
		err = errNoRoute() // a namespaced object needs its namespace
	case !t.clusterScoped && !rt.namespaced && r.Method != http.MethodGet:
		err = apierrors.NewMethodNotSupported(t.gr, strings.ToLower(r.Method)+" across all namespaces")
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	req := &resourceRequest{h: h, w: w, r: r, res: &Resource{srv: h.srv, t: t, ns: rt.namespace}, kinds: kinds, name: rt.name}
	switch {
	case r.Method == http.MethodGet && (rt.name == "" || isWatch(r)):
		req.listOrWatch()
	case r.Method == http.MethodGet:
		req.get()
	case r.Method == http.MethodPost && rt.name == "":
		req.create()
	case r.Method == http.MethodPut && rt.name != "":
		req.update()
	case r.Method == http.MethodDelete && rt.name != "":
		req.delete()
	case r.Method == http.MethodDelete:
		req.deleteCollection()
	default:
		h.writeError(w, r, apierrors.NewMethodNotSupported(t.gr, strings.ToLower(r.Method)))
	}
}

// isWatch says whether a GET asks for a watch, reading the watch
// parameter as the parameter codec reads booleans: present and neither
// "0" nor "false".
func isWatch(r *http.Request) bool {
	v, ok := r.URL.Query()["watch"]
	return ok && len(v) > 0 && v[0] != "0" && !strings.EqualFold(v[0], "false")
}

// errNoRoute is kube-apiserver's answer to a path it does not serve.
func errNoRoute() *apierrors.StatusError {
	return newStatusError(http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
}
