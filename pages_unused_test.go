package cache

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kreflector/cache/cachetest"
	"github.com/kreflector/cache/internal/listhint"
)

// aheadLister pages three ConfigMaps (continue tokens p2, p3) and, as
// our REST ListWatch does, asks for the next page ahead as soon as it
// knows a page's token; page 2 then fails with 403, after asking for
// page 3.
type aheadLister struct{}

func (aheadLister) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	h := listhint.From(ctx)
	if obj, err, ok := h.Take(ctx, opts); ok {
		return obj, err
	}
	return page(h, opts)
}

func page(h *listhint.Hint, opts metav1.ListOptions) (runtime.Object, error) {
	k := 1
	if opts.Continue != "" {
		fmt.Sscanf(opts.Continue, "p%d", &k)
	}
	next := ""
	if k < 3 {
		next = fmt.Sprintf("p%d", k+1)
		o := listhint.Next(opts, next)
		h.Ahead(o, func(context.Context) (runtime.Object, error) { return page(h, o) })
	}
	if k == 2 {
		return nil, apierrors.NewForbidden(corev1.Resource("configmaps"), "", errors.New("RBAC"))
	}
	return cmList("10", next, cm(fmt.Sprintf("c%d", k), "10")), nil
}

func (aheadLister) WatchWithContext(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return watch.NewFake(), nil
}

func (a aheadLister) List(opts metav1.ListOptions) (runtime.Object, error) {
	return a.ListWithContext(context.Background(), opts)
}

func (a aheadLister) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return a.WatchWithContext(context.Background(), opts)
}

// A LIST that fails while a page is requested ahead counts that page as
// unused: a request the server answered for nothing.
func TestPagesRequestedAheadAndUnusedAreCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := NewReflectorWithOptions(aheadLister{}, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), noWatchList)
		_, stop := startReflector(t, r)
		defer stop()
		synctest.Wait() // the first LIST has failed; the Reflector waits out its backoff
		st := r.Stats()
		if st.Lists[ListInitial] != 1 || st.ListPagesUnused != 1 {
			t.Fatalf("lists %v, pages unused %d; want one failed LIST that left page 3 unused", st.Lists, st.ListPagesUnused)
		}
	})
}
