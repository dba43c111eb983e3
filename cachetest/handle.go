package cachetest

import (
	"context"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgocache "k8s.io/client-go/tools/cache"
)

// Resource is the handle of one resource of a Server: for every namespace,
// or for one (see Namespace). It implements the Reflector's ListerWatcher
// and ListerWatcherWithContext, and client-go's. Its methods are safe for
// concurrent use; objects passed in are copied, and objects returned are
// copies the caller owns.
type Resource struct {
	srv *Server
	t   *resourceType
	// ns scopes the handle, like the namespace of a request path.
	ns string
}

var (
	_ clientgocache.ListerWatcher            = &Resource{}
	_ clientgocache.ListerWatcherWithContext = &Resource{}
)

// Namespace returns a handle scoped to namespace ns, as a client's
// ConfigMaps(ns) is: List and Watch see only that namespace, and objects
// created or updated through it get ns when they have no namespace (and
// are refused with 400 BadRequest when they have another). It panics for a
// cluster-scoped resource.
func (r *Resource) Namespace(ns string) *Resource {
	if r.t.clusterScoped && ns != "" {
		panic(fmt.Sprintf("cachetest: %s is cluster-scoped", r.t.gr))
	}
	return &Resource{srv: r.srv, t: r.t, ns: ns}
}

// GroupResource returns the resource's group and name.
func (r *Resource) GroupResource() schema.GroupResource { return r.t.gr }

// Server returns the Server the resource belongs to.
func (r *Resource) Server() *Server { return r.srv }

// Objects returns copies of the resource's objects (in the handle's
// namespace, if scoped) in key order, with the newest resourceVersion.
// It is for assertions: no fault or delay applies.
func (r *Resource) Objects() ([]runtime.Object, string) {
	s := r.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []runtime.Object
	for _, kv := range s.hist.snapshot(r.t.id, s.hist.rev) {
		if r.inScope(kv.obj) {
			out = append(out, kv.obj.DeepCopyObject())
		}
	}
	return out, formatRV(s.hist.rev)
}

// Get returns the object namespace/name (name alone for a cluster-scoped
// resource). opts.ResourceVersion "" reads the newest state, "0" any
// (possibly the lagging cache), and a number at least that fresh.
func (r *Resource) Get(ctx context.Context, namespace, name string, opts metav1.GetOptions) (runtime.Object, error) {
	c := r.call(VerbGet, namespace, name)
	if err := r.srv.begin(ctx, c); err != nil {
		return nil, err
	}
	ns, err := r.namespaceFor(namespace)
	if err != nil {
		return nil, err
	}
	rev, err := r.readRev(ctx, c, opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	s := r.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	obj := s.hist.at(r.t.id, r.t.key(ns, name), rev)
	if obj == nil {
		return nil, apierrors.NewNotFound(r.t.gr, name)
	}
	return obj.DeepCopyObject(), nil
}

// readRev is the revision a GET at resourceVersion rv reads.
func (r *Resource) readRev(ctx context.Context, c call, rv string) (uint64, error) {
	s := r.srv
	if rv != "" && rv != "0" {
		n, err := strconv.ParseUint(rv, 10, 64)
		if err != nil {
			return 0, errInvalidRV(r.t.gr, rv, err)
		}
		if err := s.waitFresh(ctx, c, n); err != nil {
			return 0, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if rv == "0" {
		return s.cacheRev(), nil
	}
	return s.hist.rev, nil
}

func (r *Resource) call(verb Verb, namespace, name string) call {
	if namespace == "" {
		namespace = r.ns
	}
	return call{verb: verb, gr: r.t.gr, namespace: namespace, name: name}
}

// namespaceFor resolves the namespace of a request about one object, given
// the namespace the object or caller names, against the handle's scope.
func (r *Resource) namespaceFor(ns string) (string, error) {
	switch {
	case r.t.clusterScoped:
		return "", nil
	case ns == "" && r.ns == "":
		return "", apierrors.NewBadRequest(fmt.Sprintf("cachetest: %s is namespaced: the object or the handle must name a namespace", r.t.gr))
	case ns == "":
		return r.ns, nil
	case r.ns != "" && ns != r.ns:
		return "", apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return ns, nil
}

// inScope says whether obj is in the handle's namespace (if any).
func (r *Resource) inScope(obj runtime.Object) bool {
	if r.ns == "" {
		return true
	}
	m, err := metaOf(obj)
	return err == nil && m.GetNamespace() == r.ns
}
