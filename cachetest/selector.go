package cachetest

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kreflector/cache/shard"
)

// Fields a field selector may name, as for most built-in resources.
const (
	fieldName      = "metadata.name"
	fieldNamespace = "metadata.namespace"
)

// predicate selects the objects a LIST or WATCH returns: the handle's
// namespace (a key prefix, not a selector, for the server) and the
// request's label, field and shard selectors.
type predicate struct {
	namespace string
	label     labels.Selector
	field     fields.Selector
	// shard, unless zero, keeps the objects whose key hashes into it;
	// shardEcho is the selector as ListMeta.ShardInfo echoes it then.
	shard     shard.Shard
	shardEcho string
}

// parseOptions validates opts as kube-apiserver does (with watch set for a
// WATCH) and builds the predicate. Unparsable selectors (the shard
// selector last, as kube-apiserver parses it in storage) and unsupported
// field labels are 400 BadRequest; invalid combinations 422 Invalid.
func (r *Resource) parseOptions(opts metav1.ListOptions, watching bool) (internalversion.ListOptions, predicate, error) {
	var in internalversion.ListOptions
	opts.Watch = watching
	if err := internalversion.Convert_v1_ListOptions_To_internalversion_ListOptions(&opts, &in, nil); err != nil {
		return in, predicate{}, apierrors.NewBadRequest(err.Error())
	}
	if errs := validation.ValidateListOptions(&in, !r.srv.opts.DisableWatchList); len(errs) > 0 {
		return in, predicate{}, errInvalidListOptions(errs)
	}
	for _, req := range in.FieldSelector.Requirements() {
		if req.Field != fieldName && req.Field != fieldNamespace {
			return in, predicate{}, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", req.Field))
		}
	}
	p := predicate{namespace: r.ns, label: in.LabelSelector, field: in.FieldSelector}
	var err error
	if p.shard, p.shardEcho, err = r.srv.parseShardSelector(in.ShardSelector); err != nil {
		return in, predicate{}, err
	}
	return in, p, nil
}

// matches says whether obj is selected.
func (p predicate) matches(obj runtime.Object) bool {
	m, err := metaOf(obj)
	if err != nil {
		return false
	}
	if p.namespace != "" && m.GetNamespace() != p.namespace {
		return false
	}
	if p.label != nil && !p.label.Empty() && !p.label.Matches(labels.Set(m.GetLabels())) {
		return false
	}
	if p.field != nil && !p.field.Empty() && !p.field.Matches(fields.Set{fieldName: m.GetName(), fieldNamespace: m.GetNamespace()}) {
		return false
	}
	return p.inShard(obj)
}

// filters says whether the selectors may leave objects out, in which case
// kube-apiserver does not count the remaining items of a page.
func (p predicate) filters() bool {
	return p.label != nil && !p.label.Empty() || p.field != nil && !p.field.Empty() || !p.shard.IsZero()
}

// inNamespace says whether obj is in the predicate's namespace.
func (p predicate) inNamespace(obj runtime.Object) bool {
	if p.namespace == "" {
		return true
	}
	m, err := metaOf(obj)
	return err == nil && m.GetNamespace() == p.namespace
}

func metaOf(obj runtime.Object) (metav1.Object, error) { return meta.Accessor(obj) }
