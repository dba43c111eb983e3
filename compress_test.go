package cache

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kreflector/cache/cachetest"
	"github.com/kreflector/cache/internal/listwatch"
	"github.com/kreflector/cache/internal/podgen"
)

// gzipSeen counts the responses net/http inflated for a client.
type gzipSeen struct {
	rt     http.RoundTripper
	zipped atomic.Int32
}

func (g *gzipSeen) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := g.rt.RoundTrip(req)
	if err == nil && resp.Uncompressed {
		g.zipped.Add(1)
	}
	return resp, err
}

// updates is a store that says on changed when an object is updated.
type updates struct {
	Store
	changed chan string
}

func (u *updates) Update(obj interface{}) error {
	err := u.Store.Update(obj)
	u.changed <- obj.(*corev1.Pod).Name
	return err
}

// TestSyncsAndWatchesOverCompressedResponses: on cachetest's server,
// which compresses as kube-apiserver does, a Reflector over a clientset's
// ListWatch syncs from a compressed LIST (paginated or not) or WatchList
// stream to what the clientset lists, and keeps watching.
func TestSyncsAndWatchesOverCompressedResponses(t *testing.T) {
	for _, tc := range []struct {
		watchList bool
		pageSize  int64
	}{{false, 0}, {false, 60}, {true, 0}} {
		t.Run(fmt.Sprintf("watchList=%v/pageSize=%d", tc.watchList, tc.pageSize), func(t *testing.T) {
			srv := cachetest.NewServer(cachetest.Options{NoWatchCache: tc.pageSize > 0})
			t.Cleanup(srv.Close)
			pods := srv.Resource(cachetest.Type{Resource: "pods", Object: &corev1.Pod{}, List: &corev1.PodList{}})
			srv.Start()
			for i := range 150 { // 1 MB in JSON; a page of 60, 400 KB
				p := podgen.Pod(i, 1)
				p.ResourceVersion = ""
				if _, err := pods.Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			cfg := srv.RESTConfig()
			seen := &gzipSeen{rt: cfg.Transport}
			cfg.Transport = seen
			cs := kubernetes.NewForConfigOrDie(cfg)
			store := &updates{Store: NewStore(MetaNamespaceKeyFunc), changed: make(chan string, 1)}
			r := NewReflectorWithOptions(listwatch.Typed(cs.CoreV1().Pods(""), "pods", nil), &corev1.Pod{}, store,
				ReflectorOptions{UseWatchList: &tc.watchList})
			r.WatchListPageSize = tc.pageSize
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() { defer close(done); r.RunWithContext(ctx) }()
			defer func() { cancel(); <-done }()
			if err := r.WaitForSync(ctx); err != nil {
				t.Fatal(err)
			}
			synced := seen.zipped.Load()
			want, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			samePods(t, store.List(), want.Items)
			if synced == 0 {
				t.Fatal("nothing the Reflector read was compressed")
			}
			changed := podgen.Changed(t, 7, 0)
			changed.ResourceVersion = ""
			if _, err := pods.Update(ctx, changed, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if name := <-store.changed; name != changed.Name {
				t.Fatalf("the watch updated %s, want %s", name, changed.Name)
			}
		})
	}
}

// samePods checks that objs are the Pods of want, as client-go decoded
// them.
func samePods(t *testing.T, objs []interface{}, want []corev1.Pod) {
	t.Helper()
	got := make([]corev1.Pod, 0, len(objs))
	for _, o := range objs {
		got = append(got, *o.(*corev1.Pod))
	}
	byName := func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(got, byName)
	slices.SortFunc(want, byName)
	if len(got) != len(want) || !reflect.DeepEqual(got, want) {
		t.Fatalf("the store holds %d Pods, not the %d client-go lists", len(got), len(want))
	}
}
