package cachetest

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
)

// Create stores a copy of obj and returns the stored object. The server
// sets its resourceVersion, and its uid and creationTimestamp when missing
// (uids are derived from the resourceVersion, so runs are reproducible);
// a generateName gets a suffix the same way. Watches get an ADDED event.
// Errors: 409 AlreadyExists, 422 Invalid without a name, 400 BadRequest
// for an object of another type or namespace.
func (r *Resource) Create(ctx context.Context, obj runtime.Object, opts metav1.CreateOptions) (runtime.Object, error) {
	obj, m, err := r.admit(ctx, VerbCreate, obj, opts.DryRun)
	if err != nil {
		return nil, err
	}
	ns := m.GetNamespace()
	s := r.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	rev := s.hist.rev + 1
	if m.GetName() == "" && m.GetGenerateName() != "" {
		m.SetName(m.GetGenerateName() + nameSuffix(rev))
	}
	if m.GetName() == "" {
		return nil, apierrors.NewInvalid(r.t.groupKind(), "", field.ErrorList{
			field.Required(field.NewPath("metadata", "name"), "name or generateName is required")})
	}
	key := r.t.key(ns, m.GetName())
	if s.hist.current(r.t.id, key) != nil {
		return nil, apierrors.NewAlreadyExists(r.t.gr, m.GetName())
	}
	m.SetResourceVersion(formatRV(rev))
	if m.GetUID() == "" {
		m.SetUID(newUID(rev))
	}
	if ts := m.GetCreationTimestamp(); ts.IsZero() {
		m.SetCreationTimestamp(metav1.NewTime(s.clock.Now()).Rfc3339Copy())
	}
	s.commitLocked(change{rv: rev, resource: r.t.id, key: key, typ: watch.Added, obj: obj})
	return obj.DeepCopyObject(), nil
}

// Update replaces the stored object with a copy of obj and returns it. A
// resourceVersion in obj must equal the stored one (else 409 Conflict);
// an empty one updates unconditionally. uid and creationTimestamp are
// kept from the stored object. An update that changes nothing is a no-op
// that returns the stored object, with no new resourceVersion and no
// event, as in kube-apiserver. Watches get a MODIFIED event (or ADDED or
// DELETED when the change moves the object into or out of a selector).
func (r *Resource) Update(ctx context.Context, obj runtime.Object, opts metav1.UpdateOptions) (runtime.Object, error) {
	obj, m, err := r.admit(ctx, VerbUpdate, obj, opts.DryRun)
	if err != nil {
		return nil, err
	}
	ns := m.GetNamespace()
	s := r.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	key := r.t.key(ns, m.GetName())
	old := s.hist.current(r.t.id, key)
	if old == nil {
		return nil, apierrors.NewNotFound(r.t.gr, m.GetName())
	}
	om, _ := metaOf(old)
	if rv := m.GetResourceVersion(); rv != "" && rv != om.GetResourceVersion() {
		return nil, errConflict(r.t.gr, m.GetName())
	}
	if uid := m.GetUID(); uid != "" && uid != om.GetUID() {
		return nil, errConflict(r.t.gr, m.GetName())
	}
	m.SetUID(om.GetUID())
	m.SetCreationTimestamp(om.GetCreationTimestamp())
	m.SetResourceVersion(om.GetResourceVersion())
	if apiequality.Semantic.DeepEqual(old, obj) {
		return old.DeepCopyObject(), nil
	}
	rev := s.hist.rev + 1
	m.SetResourceVersion(formatRV(rev))
	s.commitLocked(change{rv: rev, resource: r.t.id, key: key, typ: watch.Modified, obj: obj, prev: old})
	return obj.DeepCopyObject(), nil
}

// admit is what Create and Update do before they touch the store: check
// obj's type, apply the verb's faults, refuse dryRun, and return the
// server's own copy of obj (and its metadata) with its namespace settled.
func (r *Resource) admit(ctx context.Context, verb Verb, obj runtime.Object, dryRun []string) (runtime.Object, metav1.Object, error) {
	m, err := r.t.check(obj)
	if err != nil {
		return nil, nil, err
	}
	if err := r.srv.begin(ctx, r.call(verb, m.GetNamespace(), m.GetName())); err != nil {
		return nil, nil, err
	}
	if len(dryRun) > 0 {
		return nil, nil, apierrors.NewBadRequest("cachetest: dryRun is not supported")
	}
	obj = r.t.prepare(obj)
	m, _ = metaOf(obj)
	ns, err := r.namespaceFor(m.GetNamespace())
	if err != nil {
		return nil, nil, err
	}
	m.SetNamespace(ns)
	return obj, m, nil
}

// Delete removes namespace/name and returns its last state, stamped with
// the deletion's resourceVersion, which is also the object of the DELETED
// event watches get (as kube-apiserver does). Deletion is immediate: there
// is no graceful deletion and finalizers are not honoured. Preconditions
// on uid or resourceVersion that do not hold give 409 Conflict.
func (r *Resource) Delete(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) (runtime.Object, error) {
	if err := r.srv.begin(ctx, r.call(VerbDelete, namespace, name)); err != nil {
		return nil, err
	}
	if len(opts.DryRun) > 0 {
		return nil, apierrors.NewBadRequest("cachetest: dryRun is not supported")
	}
	ns, err := r.namespaceFor(namespace)
	if err != nil {
		return nil, err
	}
	s := r.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	return r.deleteLocked(r.t.key(ns, name), name, opts.Preconditions)
}

func (r *Resource) deleteLocked(key, name string, pre *metav1.Preconditions) (runtime.Object, error) {
	s := r.srv
	old := s.hist.current(r.t.id, key)
	if old == nil {
		return nil, apierrors.NewNotFound(r.t.gr, name)
	}
	om, _ := metaOf(old)
	if pre != nil && (pre.UID != nil && *pre.UID != om.GetUID() ||
		pre.ResourceVersion != nil && *pre.ResourceVersion != om.GetResourceVersion()) {
		return nil, errConflict(r.t.gr, name)
	}
	rev := s.hist.rev + 1
	last := old.DeepCopyObject()
	lm, _ := metaOf(last)
	lm.SetResourceVersion(formatRV(rev))
	s.commitLocked(change{rv: rev, resource: r.t.id, key: key, typ: watch.Deleted, obj: last, prev: old})
	return last.DeepCopyObject(), nil
}

// CreateAll creates objs in order and stops at the first error, which it
// returns with the index of the object.
func (r *Resource) CreateAll(ctx context.Context, objs ...runtime.Object) error {
	for i, obj := range objs {
		if _, err := r.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("cachetest: creating object %d: %w", i, err)
		}
	}
	return nil
}

// DeleteCollection deletes, one by one (each with its own resourceVersion
// and DELETED event), the objects in the handle's scope that listOpts'
// label, field and shard selectors match, and returns how many it deleted.
func (r *Resource) DeleteCollection(ctx context.Context, opts metav1.DeleteOptions, listOpts metav1.ListOptions) (int, error) {
	if err := r.srv.begin(ctx, r.call(VerbDeleteCollection, "", "")); err != nil {
		return 0, err
	}
	_, p, err := r.parseOptions(listOpts, false)
	if err != nil {
		return 0, err
	}
	s := r.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, kv := range s.hist.snapshot(r.t.id, s.hist.rev) {
		if !p.matches(kv.obj) {
			continue
		}
		m, _ := metaOf(kv.obj)
		if _, err := r.deleteLocked(kv.key, m.GetName(), opts.Preconditions); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// commitLocked records c and hands it to every open watch.
func (s *Server) commitLocked(c change) {
	s.hist.record(c)
	for w := range s.watchers {
		w.push(c)
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

// nameSuffix derives a generateName suffix from a resourceVersion, in the
// alphabet kube-apiserver draws its random suffixes from.
func nameSuffix(rev uint64) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 5)
	for i := range b {
		b[len(b)-1-i] = alphabet[rev%uint64(len(alphabet))]
		rev /= uint64(len(alphabet))
	}
	return string(b)
}

// newUID is the UID of the object created at rev: unique (rev is its last
// part) and led by bits mixed from rev, so that UIDs spread over the
// FNV-1a hash space as random ones do and shard selectors split objects
// evenly (UIDs that differ only at the end hash to nearby values).
func newUID(rev uint64) types.UID {
	h := rev + 0x9e3779b97f4a7c15
	h = (h ^ h>>30) * 0xbf58476d1ce4e5b9
	h = (h ^ h>>27) * 0x94d049bb133111eb
	h ^= h >> 31
	return types.UID(fmt.Sprintf("%08x-%04x-4%03x-8000-%012x", uint32(h>>32), uint16(h>>16), uint16(h)&0xfff, rev))
}
