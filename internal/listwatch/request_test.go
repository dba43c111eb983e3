package listwatch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	restclient "k8s.io/client-go/rest"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/internal/listwatch"
)

// recorder answers every LIST with a page of Pods (or with status, if
// set) and records what each request asked for.
type recorder struct {
	mu     sync.Mutex
	seen   []string
	status int
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.seen = append(r.seen, req.Method+" "+req.URL.Path+"?"+req.URL.RawQuery+" accept="+req.Header.Get("Accept"))
	status := r.status
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if status != 0 {
		w.WriteHeader(status)
		st := apierrors.NewResourceExpired("too old resource version: 1 (2)").ErrStatus
		st.Kind, st.APIVersion = "Status", "v1"
		json.NewEncoder(w).Encode(&st)
		return
	}
	list := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: "9", Continue: "next"}}
	for i := range 3 {
		list.Items = append(list.Items, corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("p%d", i), Namespace: "ns", ResourceVersion: "9", Labels: map[string]string{"app": "a"}}})
	}
	json.NewEncoder(w).Encode(&list)
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.seen
	r.seen = nil
	return s
}

// pair is one client's List and Watch, and the ListWatch built on that
// client.
type pair struct {
	name   string
	client func(context.Context, metav1.ListOptions) (runtime.Object, error)
	watch  func(context.Context, metav1.ListOptions) watch.Interface
	ours   cache.ListerWatcherWithContext
}

func pairs(t *testing.T, cfg *restclient.Config) []pair {
	cs := kubernetes.NewForConfigOrDie(cfg)
	dc := dynamic.NewForConfigOrDie(cfg)
	mc := metadata.NewForConfigOrDie(cfg)
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	typedLW := listwatch.Typed(cs.CoreV1().Pods("ns"), "pods", nil)
	getterLW := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", "ns", fields.Everything())
	dynLW := listwatch.Dynamic(dc, pods, "ns", nil)
	metaLW := listwatch.Metadata(mc, pods, "ns", nil)
	getter := cs.CoreV1().RESTClient()
	must := func(w watch.Interface, err error) watch.Interface {
		if err != nil {
			t.Fatalf("the client's Watch: %v", err)
		}
		return w
	}
	getterReq := func(o metav1.ListOptions) *restclient.Request {
		return getter.Get().Namespace("ns").Resource("pods").VersionedParams(&o, metav1.ParameterCodec)
	}
	return []pair{{
		name: "typed",
		client: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return cs.CoreV1().Pods("ns").List(ctx, o)
		},
		watch: func(ctx context.Context, o metav1.ListOptions) watch.Interface {
			return must(cs.CoreV1().Pods("ns").Watch(ctx, o))
		},
		ours: typedLW,
	}, {
		name: "REST client",
		client: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return getterReq(o).Do(ctx).Get()
		},
		watch: func(ctx context.Context, o metav1.ListOptions) watch.Interface {
			o.Watch = true
			return must(getterReq(o).Watch(ctx))
		},
		ours: getterLW,
	}, {
		name: "dynamic",
		client: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return dc.Resource(pods).Namespace("ns").List(ctx, o)
		},
		watch: func(ctx context.Context, o metav1.ListOptions) watch.Interface {
			return must(dc.Resource(pods).Namespace("ns").Watch(ctx, o))
		},
		ours: dynLW,
	}, {
		name: "metadata",
		client: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return mc.Resource(pods).Namespace("ns").List(ctx, o)
		},
		watch: func(ctx context.Context, o metav1.ListOptions) watch.Interface {
			return must(mc.Resource(pods).Namespace("ns").Watch(ctx, o))
		},
		ours: metaLW,
	}}
}

// TestListsAskAndAnswerAsTheirClients: each ListWatch that reads its
// responses itself sends the request its client's List sends (path,
// parameters, Accept header) and returns the same list, or the same error.
func TestListsAskAndAnswerAsTheirClients(t *testing.T) {
	rec := &recorder{}
	hs := httptest.NewServer(rec)
	defer hs.Close()
	timeout := int64(30)
	opts := metav1.ListOptions{ResourceVersion: "0", Limit: 500, LabelSelector: "app=a", TimeoutSeconds: &timeout}
	ctx := context.Background()
	for _, p := range pairs(t, &restclient.Config{Host: hs.URL}) {
		for _, status := range []int{0, http.StatusGone} {
			rec.status = status
			want, wantErr := p.client(ctx, opts)
			wantReq := rec.take()
			got, err := p.ours.ListWithContext(ctx, opts)
			gotReq := rec.take()
			if !reflect.DeepEqual(gotReq, wantReq) {
				t.Errorf("%s: requests\n%q\nwant (the client's)\n%q", p.name, gotReq, wantReq)
			}
			if fmt.Sprint(err) != fmt.Sprint(wantErr) || apierrors.IsResourceExpired(err) != apierrors.IsResourceExpired(wantErr) {
				t.Errorf("%s, status %d: error %v, want %v", p.name, status, err, wantErr)
			}
			if wantErr == nil && !reflect.DeepEqual(got, want) {
				t.Errorf("%s: list\n%#v\nwant\n%#v", p.name, got, want)
			}
		}
	}
}

// TestAListWhoseConnectionDropsIsTriedAgain: a connection closed before
// any response is retried a second later, as client-go's Request.Do
// retries a GET.
func TestAListWhoseConnectionDropsIsTriedAgain(t *testing.T) {
	rec := &recorder{}
	var mu sync.Mutex
	drops := 2
	var tries []time.Time
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		drop := drops > 0
		drops--
		tries = append(tries, time.Now())
		mu.Unlock()
		if drop {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		rec.ServeHTTP(w, r)
	}))
	defer hs.Close()
	cs := kubernetes.NewForConfigOrDie(&restclient.Config{Host: hs.URL})
	lw := listwatch.Typed(cs.CoreV1().Pods("ns"), "pods", nil)
	got, err := lw.ListWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("List after two dropped connections: %v", err)
	}
	if n := len(got.(*corev1.PodList).Items); n != 3 {
		t.Fatalf("%d Pods, want 3", n)
	}
	if n := len(rec.take()); n != 1 {
		t.Fatalf("%d answered requests, want 1", n)
	}
	// As Request.Do: a second between tries, not a burst of them.
	for i := 1; i < len(tries); i++ {
		if gap := tries[i].Sub(tries[i-1]); gap < 900*time.Millisecond {
			t.Fatalf("try %d came %v after the one before, want about a second", i+1, gap)
		}
	}
}
