package cachetest

import (
	"encoding/json"
	"net/http"
	goruntime "runtime"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiversion "k8s.io/apimachinery/pkg/version"
)

// servedVerbs are the verbs discovery announces for every resource.
var servedVerbs = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "update", "watch"}

// serveHealth answers the health checks (/healthz, /livez, /readyz) with
// "ok", and reports whether the request was one.
func serveHealth(w http.ResponseWriter, r *http.Request) bool {
	switch strings.TrimSuffix(r.URL.Path, "/") {
	case "/healthz", "/livez", "/readyz":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
		return true
	}
	return false
}

// serveMisc answers GETs of the paths that are not about a resource:
// discovery (the legacy, unaggregated JSON, which client-go's discovery
// client falls back to) and /version. It reports whether it answered.
func (h *httpServer) serveMisc(w http.ResponseWriter, r *http.Request) bool {
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case r.Method != http.MethodGet:
		return false
	case path == "/version":
		data, _ := json.Marshal(apiversion.Info{Major: "1", Minor: "37", GitVersion: "v1.37.0-cachetest",
			GoVersion: goruntime.Version(), Platform: goruntime.GOOS + "/" + goruntime.GOARCH}) // cannot fail: strings only
		w.Header().Set("Content-Type", runtime.ContentTypeJSON)
		_, _ = w.Write(data)
	case path == "/api":
		writeJSON(w, http.StatusOK, &metav1.APIVersions{Versions: []string{"v1"}, ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
			{ClientCIDR: "0.0.0.0/0", ServerAddress: h.ln.Addr().String()}}}, schema.GroupVersionKind{Kind: "APIVersions"})
	case path == "/apis":
		writeJSON(w, http.StatusOK, &metav1.APIGroupList{Groups: h.groups()}, schema.GroupVersionKind{Version: "v1", Kind: "APIGroupList"})
	default:
		gv, ok := discoveryPath(path)
		if !ok {
			return false
		}
		list := h.resources(gv)
		if gv.Group != "" && len(list.APIResources) == 0 {
			writeStatus(w, errNoRoute().ErrStatus)
			return true
		}
		writeJSON(w, http.StatusOK, list, schema.GroupVersionKind{Version: "v1", Kind: "APIResourceList"})
	}
	return true
}

// discoveryPath recognises /api/{version} and /apis/{group}/{version}.
func discoveryPath(path string) (schema.GroupVersion, bool) {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	switch {
	case len(segs) == 2 && segs[0] == "api" && segs[1] != "":
		return schema.GroupVersion{Version: segs[1]}, true
	case len(segs) == 3 && segs[0] == "apis" && segs[1] != "" && segs[2] != "":
		return schema.GroupVersion{Group: segs[1], Version: segs[2]}, true
	}
	return schema.GroupVersion{}, false
}

// servedWire returns the types that can be served over HTTP, with their
// wire kinds, sorted by resource.
func (h *httpServer) servedWire() ([]*resourceType, []wire) {
	types := h.srv.servedTypes()
	slices.SortFunc(types, func(a, b *resourceType) int { return strings.Compare(a.id, b.id) })
	var ts []*resourceType
	var ws []wire
	for _, t := range types {
		if k, err := wireOf(t); err == nil {
			ts, ws = append(ts, t), append(ws, k)
		}
	}
	return ts, ws
}

// groups lists the non-core groups served, each with its one version.
func (h *httpServer) groups() []metav1.APIGroup {
	_, ws := h.servedWire()
	var out []metav1.APIGroup
	seen := map[schema.GroupVersion]bool{}
	for _, k := range ws {
		gv := k.obj.GroupVersion()
		if gv.Group == "" || seen[gv] {
			continue
		}
		seen[gv] = true
		v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
		out = append(out, metav1.APIGroup{Name: gv.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v})
	}
	return out
}

// resources lists the resources served in gv.
func (h *httpServer) resources(gv schema.GroupVersion) *metav1.APIResourceList {
	ts, ws := h.servedWire()
	list := &metav1.APIResourceList{GroupVersion: gv.String(), APIResources: []metav1.APIResource{}}
	for i, t := range ts {
		if ws[i].obj.GroupVersion() != gv {
			continue
		}
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name:         t.gr.Resource,
			SingularName: strings.ToLower(ws[i].obj.Kind),
			Namespaced:   !t.clusterScoped,
			Kind:         ws[i].obj.Kind,
			Verbs:        servedVerbs,
		})
	}
	return list
}
