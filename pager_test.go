package cache

import (
	"context"
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func keysOf(items []interface{}) []string {
	out := make([]string, len(items))
	for i, o := range items {
		out[i] = objectID(o)
	}
	return out
}

func TestListPagesFollowsContinueTokens(t *testing.T) {
	first := cmList("7", "t1", cm("a", "1"), cm("b", "2"))
	remaining := int64(1)
	first.RemainingItemCount = &remaining
	l := &scriptLW{lists: []listReply{{list: first}, {list: cmList("", "", cm("c", "3"))}}}
	res, err := (&pager{lister: l, pageSize: 2}).list(context.Background(), &metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.paged || res.resourceVersion != "7" || len(res.items) != 3 || cap(res.items) != 3 {
		t.Fatalf("got paged=%v rv=%q items=%v cap=%d", res.paged, res.resourceVersion, keysOf(res.items), cap(res.items))
	}
	// The continued page drops the RV and keeps the limit.
	want := []string{`LIST rv="0" limit=2`, `LIST rv="" limit=2 continue=t1`}
	if got := l.recorded(); !slices.Equal(got, want) {
		t.Errorf("LISTs %q, want %q", got, want)
	}
}

func TestListPagesCopiesItemsOutOfPages(t *testing.T) {
	page := cmList("7", "", cm("a", "1"))
	l := &scriptLW{lists: []listReply{{list: page}}}
	res, err := (&pager{lister: l, pageSize: 500}).list(context.Background(), &metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	page.Items[0].Name = "changed"
	if got := res.items[0].(*corev1.ConfigMap).Name; got != "a" {
		t.Fatalf("item shares memory with its page: name %q", got)
	}
}

func TestListPagesExpiredContinueFallsBackToFullList(t *testing.T) {
	l := &scriptLW{lists: []listReply{
		{list: cmList("7", "t1", cm("a", "1"))},
		{err: apierrors.NewResourceExpired("continue too old")},
		{list: cmList("9", "", cm("a", "1"), cm("b", "8"))},
	}}
	res, err := (&pager{lister: l, pageSize: 1}).list(context.Background(), &metav1.ListOptions{ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	if full, want := l.recorded()[2], `LIST rv="5" match=NotOlderThan`; full != want {
		t.Fatalf("fallback %s: want the original RV and match, no limit, no token (%s)", full, want)
	}
	if res.resourceVersion != "9" || len(res.items) != 2 || !res.paged {
		t.Fatalf("fallback result rv=%q items=%v paged=%v", res.resourceVersion, keysOf(res.items), res.paged)
	}
}

func TestListPagesErrors(t *testing.T) {
	expired := apierrors.NewResourceExpired("old")
	l := &scriptLW{lists: []listReply{{err: expired}}}
	if _, err := (&pager{lister: l, pageSize: 1}).list(context.Background(), &metav1.ListOptions{}); !errors.Is(err, expired) {
		t.Fatalf("an expired first page is the caller's to handle; got %v", err)
	}
	l = &scriptLW{lists: []listReply{{list: cmList("1", "t", cm("a", "1"))}, {err: apierrors.NewInternalError(errors.New("x"))}}}
	if _, err := (&pager{lister: l, pageSize: 1}).list(context.Background(), &metav1.ListOptions{}); !apierrors.IsInternalError(err) {
		t.Fatalf("a failing later page must fail the list; got %v", err)
	}
	l = &scriptLW{lists: []listReply{{list: &corev1.ConfigMap{}}}}
	if _, err := (&pager{lister: l, pageSize: 1}).list(context.Background(), &metav1.ListOptions{}); err == nil {
		t.Fatal("a non-list answer must be an error")
	}
	table := &unstructured.UnstructuredList{}
	table.SetAPIVersion("meta.k8s.io/v1")
	table.SetKind("Table")
	l = &scriptLW{lists: []listReply{{list: table}}}
	if _, err := (&pager{lister: l, pageSize: 1}).list(context.Background(), &metav1.ListOptions{}); err == nil {
		t.Fatal("a Table answer must be an error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (&pager{lister: &scriptLW{}, pageSize: 1}).list(ctx, &metav1.ListOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled context must stop paging; got %v", err)
	}
}
