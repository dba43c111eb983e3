package cachetest_test

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kreflector/cache/cachetest"
)

// client-go's clientset creates, reads, updates and deletes through the
// HTTP server, with the core's answers and errors.
func TestHTTPClientsetCRUD(t *testing.T) {
	srv, cms, cs := startHTTP(t, cachetest.Options{})
	ctx := bounded(t)
	c := cs.CoreV1().ConfigMaps("ns")

	created, err := c.Create(ctx, cm("", "a", "app", "x"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Namespace != "ns" || created.ResourceVersion != "1" || created.UID == "" {
		t.Fatalf("created %s/%s@%s uid %q, want ns/a@1 with a uid", created.Namespace, created.Name, created.ResourceVersion, created.UID)
	}
	if _, err := c.Create(ctx, cm("", "a"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create: %v, want AlreadyExists", err)
	}

	got, err := c.Get(ctx, "a", metav1.GetOptions{})
	if err != nil || got.Labels["app"] != "x" {
		t.Fatalf("get: %+v, %v", got, err)
	}
	got.Data = map[string]string{"k": "v"}
	updated, err := c.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil || updated.ResourceVersion != "2" || updated.Data["k"] != "v" {
		t.Fatalf("update: %+v, %v", updated, err)
	}
	if _, err := c.Update(ctx, got, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("update with the stale resourceVersion 1: %v, want Conflict", err)
	}

	if err := c.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get after delete: %v, want NotFound", err)
	}
	if err := c.Delete(ctx, "a", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("delete of a missing object: %v, want NotFound", err)
	}
	objs, rv := cms.Objects()
	if len(objs) != 0 || rv != "3" || srv.Stats().Calls[cachetest.VerbCreate] != 2 {
		t.Fatalf("server has %d objects at %s after %d creates", len(objs), rv, srv.Stats().Calls[cachetest.VerbCreate])
	}
}

// Lists page with limit and continue, read one snapshot across pages,
// count the remaining items, and an expired continue token is 410.
func TestHTTPClientsetListPaging(t *testing.T) {
	srv, cms, cs := startHTTP(t, cachetest.Options{})
	ctx := bounded(t)
	create(t, cms, "ns/a", "ns/b", "ns/c", "ns/d", "ns/e", "other/f")
	c := cs.CoreV1().ConfigMaps("ns")

	first, err := c.List(ctx, metav1.ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := cmNames(first); !equal(got, []string{"a", "b"}) || first.Continue == "" ||
		first.RemainingItemCount == nil || *first.RemainingItemCount != 3 || first.ResourceVersion != "6" {
		t.Fatalf("first page %v continue %q remaining %v at %s", got, first.Continue, first.RemainingItemCount, first.ResourceVersion)
	}
	remove(t, cms, "ns/c") // after the snapshot: the next page still has c
	second, err := c.List(ctx, metav1.ListOptions{Limit: 2, Continue: first.Continue})
	if err != nil {
		t.Fatal(err)
	}
	if got := cmNames(second); !equal(got, []string{"c", "d"}) || second.ResourceVersion != "6" {
		t.Fatalf("second page %v at %s, want [c d] at 6", got, second.ResourceVersion)
	}

	if err := srv.Compact(srv.ResourceVersion()); err != nil {
		t.Fatal(err)
	}
	_, err = c.List(ctx, metav1.ListOptions{Limit: 2, Continue: second.Continue})
	if !apierrors.IsResourceExpired(err) {
		t.Fatalf("continue after compaction: %v, want 410 Expired", err)
	}
	var st apierrors.APIStatus
	if !apierrors.IsResourceExpired(err) || !asStatus(err, &st) || st.Status().ListMeta.Continue == "" {
		t.Fatalf("the 410 carries no inconsistent continue token: %v", err)
	}
	rest, err := c.List(ctx, metav1.ListOptions{Limit: 2, Continue: st.Status().ListMeta.Continue})
	if err != nil || !equal(cmNames(rest), []string{"e"}) {
		t.Fatalf("inconsistent continuation: %v, %v, want [e]", cmNames(rest), err)
	}
}

// Label and field selectors reach the core; all namespaces are listed
// from the cluster-wide path.
func TestHTTPClientsetSelectors(t *testing.T) {
	_, cms, cs := startHTTP(t, cachetest.Options{})
	ctx := bounded(t)
	for _, c := range []*corev1.ConfigMap{cm("ns", "a", "app", "x"), cm("ns", "b", "app", "y"), cm("other", "c", "app", "x")} {
		if _, err := cms.Create(ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	all := cs.CoreV1().ConfigMaps(metav1.NamespaceAll)
	for _, tc := range []struct {
		opts metav1.ListOptions
		want []string
	}{
		{metav1.ListOptions{}, []string{"a", "b", "c"}},
		{metav1.ListOptions{LabelSelector: "app=x"}, []string{"a", "c"}},
		{metav1.ListOptions{LabelSelector: "app!=x"}, []string{"b"}},
		{metav1.ListOptions{FieldSelector: "metadata.name=b"}, []string{"b"}},
		{metav1.ListOptions{FieldSelector: "metadata.namespace=other", LabelSelector: "app=x"}, []string{"c"}},
	} {
		list, err := all.List(ctx, tc.opts)
		if err != nil {
			t.Fatalf("%+v: %v", tc.opts, err)
		}
		if got := cmNames(list); !equal(got, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.opts, got, tc.want)
		}
	}
	if _, err := all.List(ctx, metav1.ListOptions{FieldSelector: "data.k=v"}); !apierrors.IsBadRequest(err) {
		t.Fatalf("unsupported field selector: %v, want 400", err)
	}
}

func asStatus(err error, st *apierrors.APIStatus) bool { return errors.As(err, st) }
