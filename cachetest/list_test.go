package cachetest_test

import (
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kreflector/cache/cachetest"
)

func list(t *testing.T, r *cachetest.Resource, opts metav1.ListOptions) (*corev1.ConfigMapList, error) {
	t.Helper()
	out, err := r.ListWithContext(t.Context(), opts)
	if err != nil {
		return nil, err
	}
	return out.(*corev1.ConfigMapList), nil
}

func mustList(t *testing.T, r *cachetest.Resource, opts metav1.ListOptions) ([]string, *corev1.ConfigMapList) {
	t.Helper()
	l, err := list(t, r, opts)
	if err != nil {
		t.Fatalf("list %+v: %v", opts, err)
	}
	return ids(t, l), l
}

func TestListResourceVersionSemantics(t *testing.T) {
	_, cms := newServer(t, cachetest.Options{CacheLag: 2})
	create(t, cms, "ns/a", "ns/b", "ns/c") // RVs 1..3
	update(t, cms, "ns/a")                 // 4
	remove(t, cms, "ns/b")                 // 5
	for _, tc := range []struct {
		name string
		opts metav1.ListOptions
		want []string
		rv   string
	}{
		{"newest", metav1.ListOptions{}, []string{"ns/a@4", "ns/c@3"}, "5"},
		{"any: the cache, two changes behind", metav1.ListOptions{ResourceVersion: "0"}, []string{"ns/a@1", "ns/b@2", "ns/c@3"}, "3"},
		{"exact", metav1.ListOptions{ResourceVersion: "2", ResourceVersionMatch: metav1.ResourceVersionMatchExact}, []string{"ns/a@1", "ns/b@2"}, "2"},
		{"legacy exact: RV with a limit", metav1.ListOptions{ResourceVersion: "4", Limit: 10}, []string{"ns/a@4", "ns/b@2", "ns/c@3"}, "4"},
		{"not older than: the lagging cache is new enough", metav1.ListOptions{ResourceVersion: "2", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}, []string{"ns/a@1", "ns/b@2", "ns/c@3"}, "3"},
		{"not older than: the cache catches up", metav1.ListOptions{ResourceVersion: "4"}, []string{"ns/a@4", "ns/b@2", "ns/c@3"}, "4"},
		{"not older than with a limit: from storage", metav1.ListOptions{ResourceVersion: "2", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Limit: 5}, []string{"ns/a@4", "ns/c@3"}, "5"},
	} {
		got, l := mustList(t, cms, tc.opts)
		if !equal(got, tc.want) || l.ResourceVersion != tc.rv {
			t.Errorf("%s: %v at %s, want %v at %s", tc.name, got, l.ResourceVersion, tc.want, tc.rv)
		}
	}
}

func TestListAtRV0FromWatchCacheIgnoresLimit(t *testing.T) {
	_, cms := newServer(t, cachetest.Options{})
	create(t, cms, "ns/a", "ns/b", "ns/c")
	if got, l := mustList(t, cms, metav1.ListOptions{ResourceVersion: "0", Limit: 1}); len(got) != 3 || l.Continue != "" {
		t.Fatalf("watch cache must answer RV 0 in one page: %v %q", got, l.Continue)
	}
	_, noCache := newServer(t, cachetest.Options{NoWatchCache: true, CacheLag: 2})
	create(t, noCache, "ns/a", "ns/b", "ns/c")
	if got, l := mustList(t, noCache, metav1.ListOptions{ResourceVersion: "0", Limit: 1}); !equal(got, []string{"ns/a@1"}) || l.Continue == "" {
		t.Fatalf("without a watch cache RV 0 is paged and fresh: %v %q", got, l.Continue)
	}
}

func TestListPagesReadOneSnapshot(t *testing.T) {
	_, cms := newServer(t, cachetest.Options{})
	create(t, cms, "a/x", "b/x", "c/x", "d/x") // 1..4
	got, l := mustList(t, cms, metav1.ListOptions{Limit: 2})
	if !equal(got, []string{"a/x@1", "b/x@2"}) || l.Continue == "" || l.ResourceVersion != "4" {
		t.Fatalf("first page %v %q at %s", got, l.Continue, l.ResourceVersion)
	}
	if l.RemainingItemCount == nil || *l.RemainingItemCount != 2 {
		t.Fatalf("remainingItemCount %v, want 2", l.RemainingItemCount)
	}
	remove(t, cms, "c/x")
	create(t, cms, "e/x")
	got, l = mustList(t, cms, metav1.ListOptions{Limit: 5, Continue: l.Continue})
	if !equal(got, []string{"c/x@3", "d/x@4"}) || l.Continue != "" || l.ResourceVersion != "4" {
		t.Fatalf("second page must come from the first page's snapshot: %v %q at %s", got, l.Continue, l.ResourceVersion)
	}
	if n := cms.Server().Stats().Lists; n != 1 {
		t.Fatalf("Stats.Lists = %d, want 1 (a continued page is the same list)", n)
	}
}

func TestContinueTokenExpiresWithCompaction(t *testing.T) {
	srv, cms := newServer(t, cachetest.Options{})
	create(t, cms, "a/x", "b/x", "c/x")
	_, l := mustList(t, cms, metav1.ListOptions{Limit: 1})
	create(t, cms, "bb/x")
	if err := srv.Compact(srv.ResourceVersion()); err != nil {
		t.Fatal(err)
	}
	_, err := list(t, cms, metav1.ListOptions{Limit: 1, Continue: l.Continue})
	if !apierrors.IsResourceExpired(err) {
		t.Fatalf("continue after compaction: %v, want 410 Expired", err)
	}
	status := err.(apierrors.APIStatus).Status()
	if status.Continue == "" {
		t.Fatal("the 410 must carry an inconsistent continue token")
	}
	got, _ := mustList(t, cms, metav1.ListOptions{Limit: 5, Continue: status.Continue})
	if !equal(got, []string{"b/x@2", "bb/x@4", "c/x@3"}) {
		t.Fatalf("inconsistent continuation reads the newest state after the key: %v", got)
	}
}

func TestListErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cms := newServer(t, cachetest.Options{})
		create(t, cms, "ns/a", "ns/b")
		check := func(name string, opts metav1.ListOptions, pred func(error) bool) {
			t.Helper()
			if _, err := list(t, cms, opts); !pred(err) {
				t.Errorf("%s: unexpected error %v", name, err)
			}
		}
		check("exact with 0", metav1.ListOptions{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchExact}, apierrors.IsInvalid)
		check("match without RV", metav1.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchExact}, apierrors.IsInvalid)
		check("sendInitialEvents on a list", metav1.ListOptions{SendInitialEvents: new(bool)}, apierrors.IsInvalid)
		check("garbage RV", metav1.ListOptions{ResourceVersion: "x"}, apierrors.IsInvalid)
		check("garbage continue", metav1.ListOptions{Continue: "!!"}, apierrors.IsBadRequest)
		check("bad label selector", metav1.ListOptions{LabelSelector: "a in (b"}, apierrors.IsBadRequest)
		check("unsupported field", metav1.ListOptions{FieldSelector: "spec.x=y"}, apierrors.IsBadRequest)
		_, l := mustList(t, cms, metav1.ListOptions{Limit: 1})
		check("continue with RV", metav1.ListOptions{Continue: l.Continue, ResourceVersion: "1"}, apierrors.IsBadRequest)
		if err := srv.Compact("2"); err != nil {
			t.Fatal(err)
		}
		check("exact at a compacted RV", metav1.ListOptions{ResourceVersion: "1", ResourceVersionMatch: metav1.ResourceVersionMatchExact}, apierrors.IsResourceExpired)
		start := time.Now()
		check("too large", metav1.ListOptions{ResourceVersion: "3"}, func(err error) bool {
			return apierrors.IsTimeout(err) && apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge)
		})
		if waited := time.Since(start); waited != 3*time.Second {
			t.Errorf("too large answered after %v, want the 3s freshness wait", waited)
		}
	})
}

func TestListWaitsForAResourceVersionAboutToExist(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, cms := newServer(t, cachetest.Options{})
		create(t, cms, "ns/a")
		go func() {
			time.Sleep(2 * time.Second)
			create(t, cms, "ns/b")
		}()
		got, l := mustList(t, cms, metav1.ListOptions{ResourceVersion: "2"})
		if !equal(got, []string{"ns/a@1", "ns/b@2"}) || l.ResourceVersion != "2" {
			t.Fatalf("%v at %s", got, l.ResourceVersion)
		}
	})
}

func TestListSelectors(t *testing.T) {
	_, cms := newServer(t, cachetest.Options{})
	ctx := t.Context()
	if err := cms.CreateAll(ctx, cm("a", "x", "app", "web"), cm("a", "y", "app", "db"), cm("b", "x", "app", "web"), cm("b", "z")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		r    *cachetest.Resource
		opts metav1.ListOptions
		want []string
	}{
		{"label", cms, metav1.ListOptions{LabelSelector: "app=web"}, []string{"a/x@1", "b/x@3"}},
		{"label set-based", cms, metav1.ListOptions{LabelSelector: "app notin (web)"}, []string{"a/y@2", "b/z@4"}},
		{"name", cms, metav1.ListOptions{FieldSelector: "metadata.name=x"}, []string{"a/x@1", "b/x@3"}},
		{"namespace field", cms, metav1.ListOptions{FieldSelector: "metadata.namespace!=a"}, []string{"b/x@3", "b/z@4"}},
		{"scoped handle", cms.Namespace("b"), metav1.ListOptions{}, []string{"b/x@3", "b/z@4"}},
		{"scoped with label", cms.Namespace("a"), metav1.ListOptions{LabelSelector: "app"}, []string{"a/x@1", "a/y@2"}},
	} {
		if got, _ := mustList(t, tc.r, tc.opts); !equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	got, l := mustList(t, cms, metav1.ListOptions{LabelSelector: "app=db", Limit: 1})
	if !equal(got, []string{"a/y@2"}) || l.Continue == "" || l.RemainingItemCount != nil {
		t.Fatalf("a filtered page keeps a token but no remaining count: %v %q %v", got, l.Continue, l.RemainingItemCount)
	}
	got, l = mustList(t, cms, metav1.ListOptions{LabelSelector: "app=db", Limit: 1, Continue: l.Continue})
	if len(got) != 0 || l.Continue != "" {
		t.Fatalf("the last filtered page may be empty: %v %q", got, l.Continue)
	}
}
