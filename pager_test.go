package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache/cachetest"
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

func TestFailedPageIsRetriedFromItsContinueToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		lw := newScript([]listReply{
			{list: cmList("10", "tok1", cm("a", "5"))},
			{err: apierrors.NewTooManyRequests("busy", 7)},
			{err: connectionRefused()},
			{list: cmList("", "tok2", cm("b", "6"))},
			{err: apierrors.NewServiceUnavailable("restarting")},
			{list: cmList("", "", cm("c", "7"))},
		}, nil)
		store := cachetest.NewRecordingStore(nil)
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, noWatchList)
		ctx, stop := startReflector(t, r)
		if err := r.WaitForSync(ctx); err != nil {
			t.Fatal(err)
		}
		stop()
		calls := listsAt(lw, start)
		if len(calls) != 6 || !strings.HasSuffix(calls[0], `rv="0" limit=500`) {
			t.Fatalf("calls %q", calls)
		}
		for _, i := range []int{1, 2, 3} {
			if !strings.HasSuffix(calls[i], `rv="" limit=500 continue=tok1`) {
				t.Errorf("call %d = %q: the failed page must be asked for again from its token", i, calls[i])
			}
		}
		if !strings.HasPrefix(calls[2], "7s ") {
			t.Errorf("retry after a 429 with Retry-After 7 came at %q", calls[2])
		}
		if got := store.CallStrings(); len(got) != 1 || got[0] != "Replace rv=10 [ns/a@5 ns/b@6 ns/c@7]" {
			t.Fatalf("store calls %q", got)
		}
		if st := r.Stats(); st.ListPageRetries != 3 || st.Lists[ListInitial] != 1 || st.Lists[ListRetry] != 0 {
			t.Fatalf("stats: page retries %d, lists %v", st.ListPageRetries, st.Lists)
		}
	})
}

// listsAt renders each LIST lw got as "<time since start> <options>",
// once lw is called no more.
func listsAt(lw *scriptLW, start time.Time) []string {
	var out []string
	at := lw.arrivals("LIST", start)
	for _, c := range lw.recorded() {
		if opts, ok := strings.CutPrefix(c, "LIST "); ok {
			out = append(out, fmt.Sprintf("%s %s", at[len(out)].Round(time.Second), opts))
		}
	}
	return out
}

func TestPageRetriesAreBoundedAndCanBeTurnedOff(t *testing.T) {
	failing := func(n int) []listReply {
		out := []listReply{{list: cmList("10", "tok1", cm("a", "5"))}}
		for range n {
			out = append(out, listReply{err: apierrors.NewInternalError(errors.New("etcd"))})
		}
		return append(out, listReply{list: cmList("11", "", cm("a", "5"))})
	}
	for _, tc := range []struct {
		name    string
		retries int
		want    []string
	}{
		{"limit reached", 2, []string{`rv="0" limit=500`, "continue=tok1", "continue=tok1", "continue=tok1", `rv="0" limit=500`}},
		{"off", -1, []string{`rv="0" limit=500`, "continue=tok1", `rv="0" limit=500`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lw := newScript(failing(len(tc.want)-2), nil)
				lw.noWL = true
				r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), ReflectorOptions{UseWatchList: ptr.To(false), ListPageRetries: tc.retries})
				runUntilDrained(t, r, lw)
				calls := lw.recorded()
				for i, w := range tc.want {
					if i >= len(calls) || !strings.Contains(calls[i], w) {
						t.Fatalf("calls %q, want %q", calls, tc.want)
					}
				}
				if st := r.Stats(); st.Lists[ListInitial] != 1 || st.Lists[ListRetry] != 1 {
					t.Fatalf("lists %v", st.Lists)
				}
			})
		})
	}
}

func TestPageRetryStopsOnNonTransientErrorsAndCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Which errors are retried is classify's to say (TestClassify).
		var off pageRetry
		if off.wait(t.Context(), 0) {
			t.Fatal("the zero policy never retries")
		}
	})
	synctest.Test(t, func(t *testing.T) {
		lw := &scriptLW{lists: []listReply{{list: cmList("1", "t", cm("a", "1"))}, {err: connectionRefused()}}}
		r := NewReflectorWithOptions(newScript(nil, nil), nil, cachetest.NewRecordingStore(nil), noWatchList)
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() {
			p := &pager{lister: lw, pageSize: 1, retry: r.newPageRetry()}
			_, err := p.list(ctx, &metav1.ListOptions{})
			errc <- err
		}()
		synctest.Wait() // waiting to retry the second page
		cancel()
		if err := <-errc; err == nil || len(lw.recorded()) != 2 {
			t.Fatalf("cancelled during the wait: err %v after %d pages", err, len(lw.recorded()))
		}
	})
}

func TestTransientListErrors(t *testing.T) {
	transient := []error{
		connectionRefused(),
		apierrors.NewTooManyRequests("x", 1),
		apierrors.NewInternalError(errors.New("x")),
		apierrors.NewServiceUnavailable("x"),
		apierrors.NewTimeoutError("x", 1),
		apierrors.NewServerTimeout(cmGVR, "list", 1),
		apierrors.NewGenericServerResponse(502, "get", cmGVR, "", "bad gateway", 0, true),
		&url.Error{Op: "Get", URL: "https://x", Err: io.ErrUnexpectedEOF},
		&net.OpError{Op: "read", Err: timeoutErr{}},
		fmt.Errorf("page: %w", io.EOF),
	}
	for _, err := range transient {
		if !isTransientListError(err) {
			t.Errorf("%v (%T) should be transient", err, err)
		}
	}
	permanent := []error{
		apierrors.NewForbidden(cmGVR, "", errors.New("x")),
		apierrors.NewBadRequest("x"),
		apierrors.NewResourceExpired("x"),
		tooLargeRV(),
		context.Canceled,
		&url.Error{Op: "Get", URL: "https://x", Err: context.DeadlineExceeded},
		errors.New("decode failed"),
	}
	for _, err := range permanent {
		if isTransientListError(err) {
			t.Errorf("%v (%T) should not be transient", err, err)
		}
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }
