package cache

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// pageLister answers LISTs from a fixed sequence and records options.
type pageLister struct {
	replies []listReply
	got     []metav1.ListOptions
}

func (p *pageLister) ListWithContext(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
	p.got = append(p.got, o)
	r := p.replies[0]
	p.replies = p.replies[1:]
	return r.list, r.err
}

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
	l := &pageLister{replies: []listReply{{list: first}, {list: cmList("", "", cm("c", "3"))}}}
	res, err := (&pager{lister: l, pageSize: 2}).list(context.Background(), &metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.paged || res.resourceVersion != "7" || len(res.items) != 3 || cap(res.items) != 3 {
		t.Fatalf("got paged=%v rv=%q items=%v cap=%d", res.paged, res.resourceVersion, keysOf(res.items), cap(res.items))
	}
	if l.got[0].Limit != 2 || l.got[0].ResourceVersion != "0" {
		t.Errorf("first page options %+v", l.got[0])
	}
	if l.got[1].Continue != "t1" || l.got[1].ResourceVersion != "" || l.got[1].Limit != 2 {
		t.Errorf("continued page options %+v: the RV must be dropped and the limit kept", l.got[1])
	}
}

func TestListPagesCopiesItemsOutOfPages(t *testing.T) {
	page := cmList("7", "", cm("a", "1"))
	l := &pageLister{replies: []listReply{{list: page}}}
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
	l := &pageLister{replies: []listReply{
		{list: cmList("7", "t1", cm("a", "1"))},
		{err: apierrors.NewResourceExpired("continue too old")},
		{list: cmList("9", "", cm("a", "1"), cm("b", "8"))},
	}}
	res, err := (&pager{lister: l, pageSize: 1}).list(context.Background(), &metav1.ListOptions{ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	full := l.got[2]
	if full.Limit != 0 || full.Continue != "" || full.ResourceVersion != "5" || full.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan {
		t.Fatalf("fallback options %+v: want the original RV and match, no limit, no token", full)
	}
	if res.resourceVersion != "9" || len(res.items) != 2 || !res.paged {
		t.Fatalf("fallback result rv=%q items=%v paged=%v", res.resourceVersion, keysOf(res.items), res.paged)
	}
}

func TestListPagesErrors(t *testing.T) {
	expired := apierrors.NewResourceExpired("old")
	l := &pageLister{replies: []listReply{{err: expired}}}
	if _, err := (&pager{lister: l, pageSize: 1}).list(context.Background(), &metav1.ListOptions{}); !errors.Is(err, expired) {
		t.Fatalf("an expired first page is the caller's to handle; got %v", err)
	}
	l = &pageLister{replies: []listReply{{list: cmList("1", "t", cm("a", "1"))}, {err: apierrors.NewInternalError(errors.New("x"))}}}
	if _, err := (&pager{lister: l, pageSize: 1}).list(context.Background(), &metav1.ListOptions{}); !apierrors.IsInternalError(err) {
		t.Fatalf("a failing later page must fail the list; got %v", err)
	}
	l = &pageLister{replies: []listReply{{list: &corev1.ConfigMap{}}}}
	if _, err := (&pager{lister: l, pageSize: 1}).list(context.Background(), &metav1.ListOptions{}); err == nil {
		t.Fatal("a non-list answer must be an error")
	}
	table := &unstructured.UnstructuredList{}
	table.SetAPIVersion("meta.k8s.io/v1")
	table.SetKind("Table")
	l = &pageLister{replies: []listReply{{list: table}}}
	if _, err := (&pager{lister: l, pageSize: 1}).list(context.Background(), &metav1.ListOptions{}); err == nil {
		t.Fatal("a Table answer must be an error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (&pager{lister: &pageLister{}, pageSize: 1}).list(ctx, &metav1.ListOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled context must stop paging; got %v", err)
	}
}
