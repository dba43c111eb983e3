package listwatch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	restclient "k8s.io/client-go/rest"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/internal/listdecode"
	"github.com/kreflector/cache/internal/listhint"
	"github.com/kreflector/cache/internal/listwatch"
)

// pipelineServer answers a Pod LIST in pages of perPage, each with a
// continue token but the last; a page writes its metadata and first
// item, then holds the rest until the next page is asked for (or until
// patience runs out), recording whether it was.
type pipelineServer struct {
	pages, perPage int
	patience       time.Duration

	mu     sync.Mutex
	asked  map[int]chan struct{}
	early  map[int]bool
	listed int
}

func (s *pipelineServer) askedFor(k int) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.asked[k] == nil {
		s.asked[k] = make(chan struct{})
	}
	return s.asked[k]
}

func (s *pipelineServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("watch") == "true" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return
	}
	k := 1
	if c := q.Get("continue"); c != "" {
		fmt.Sscanf(c, "p%d", &k)
	}
	s.mu.Lock()
	s.listed++
	s.mu.Unlock()
	close(s.askedFor(k))
	s.writePage(w, k)
}

func (s *pipelineServer) writePage(w http.ResponseWriter, k int) {
	w.Header().Set("Content-Type", "application/json")
	next := ""
	if k < s.pages {
		next = fmt.Sprintf("p%d", k+1)
	}
	fmt.Fprintf(w, `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7","continue":%q},"items":[`, next)
	for i := 0; i < s.perPage; i++ {
		if i > 0 {
			fmt.Fprint(w, ",")
		}
		pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d-%d", k, i), Namespace: "ns", ResourceVersion: "7"}}
		b, _ := json.Marshal(&pod)
		w.Write(b)
		w.(http.Flusher).Flush()
		if i == 0 && next != "" {
			s.waitForNext(k)
		}
	}
	fmt.Fprint(w, "]}")
}

// waitForNext holds page k until page k+1 is asked for; patience bounds
// the wait so that a client that never pipelines still finishes.
func (s *pipelineServer) waitForNext(k int) {
	select {
	case <-s.askedFor(k + 1):
		s.mu.Lock()
		s.early[k] = true
		s.mu.Unlock()
	case <-time.After(s.patience):
	}
}

// TestTypedListRequestsTheNextPageWhileTheCurrentOneArrives runs a
// Reflector over a clientset's Pod client: each page's successor must be
// asked for while the page is still arriving, and the store gets every
// Pod once.
func TestTypedListRequestsTheNextPageWhileTheCurrentOneArrives(t *testing.T) {
	srv := &pipelineServer{pages: 4, perPage: 3, patience: 20 * time.Second, asked: map[int]chan struct{}{}, early: map[int]bool{}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	cs := kubernetes.NewForConfigOrDie(&restclient.Config{Host: hs.URL, ContentConfig: restclient.ContentConfig{ContentType: "application/json"}})
	lw := listwatch.Typed(cs.CoreV1().Pods(""), "pods", nil)
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	noWatchList := false
	r := cache.NewReflectorWithOptions(lw, &corev1.Pod{}, store, cache.ReflectorOptions{UseWatchList: &noWatchList})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); r.RunWithContext(ctx) }()
	if err := r.WaitForSync(ctx); err != nil {
		t.Fatalf("no sync: %v", err)
	}
	cancel()
	<-done
	if got, want := len(store.List()), srv.pages*srv.perPage; got != want {
		t.Fatalf("store holds %d Pods, want %d", got, want)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for k := 1; k < srv.pages; k++ {
		if !srv.early[k] {
			t.Errorf("page %d was not asked for while page %d was arriving", k+1, k)
		}
	}
	if srv.listed != srv.pages {
		t.Errorf("%d LIST requests for %d pages", srv.listed, srv.pages)
	}
}

// A page whose call is cancelled while its body is decoded (dropped, or
// its LIST given up) asks for no page ahead when its continue token comes.
func TestACancelledPageRequestsNoMore(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Query().Get("continue"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"PodList","apiVersion":"v1","metadata":{"continue":"p2"},"items":[]}`)
	}))
	defer hs.Close()
	cs := kubernetes.NewForConfigOrDie(&restclient.Config{Host: hs.URL})
	hintCtx, h := listhint.With(context.Background(), nil, false)
	ctx, cancel := context.WithCancel(hintCtx)
	rest := listwatch.REST{
		Request: func(opts metav1.ListOptions) *restclient.Request {
			return cs.CoreV1().RESTClient().Get().Resource("pods").VersionedParams(&opts, scheme.ParameterCodec)
		},
		Decode: func(_ context.Context, body io.Reader, o listdecode.Options) (runtime.Object, error) {
			io.Copy(io.Discard, body)
			cancel() // the page is dropped while it arrives
			o.Meta(metav1.ListMeta{Continue: "p2"})
			return &corev1.PodList{}, nil
		},
	}
	listwatch.NewREST(rest, nil).ListWithContext(ctx, metav1.ListOptions{Limit: 1})
	h.Close()
	if n := h.Unused(); n != 0 {
		t.Fatalf("%d pages were requested ahead; want none", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 {
		t.Fatalf("the server was asked for pages %q; want only the first", asked)
	}
}

// TestDirectOnlyForOurListWatch: Direct knows a ListWatch NewREST made,
// and a copy of it, from anything wrapping one.
func TestDirectOnlyForOurListWatch(t *testing.T) {
	ours := listwatch.NewREST(listwatch.REST{}, func(*metav1.ListOptions) {})
	if !listwatch.Direct(ours) {
		t.Fatal("NewREST's ListWatch is not direct")
	}
	copied := *ours
	if !listwatch.Direct(&copied) {
		t.Fatal("a copy of it is not direct")
	}
	wrapped := *ours
	wrapped.ListWithContextFunc = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return ours.ListWithContextFunc(ctx, o)
	}
	for name, lw := range map[string]any{"wrapped": &wrapped, "nil": (*clientgocache.ListWatch)(nil), "other type": struct{}{},
		"no context func": &clientgocache.ListWatch{ListFunc: ours.ListFunc}} {
		if listwatch.Direct(lw) {
			t.Errorf("%s: direct", name)
		}
	}
}

// TestDirectThroughWatchListSemantics: client-go's wrapper that adds the
// client's WatchList semantics is seen through, as long as it is what
// Direct takes it for: a struct embedding the ListWatch first, whose only
// method of its own is IsWatchListSemanticsUnSupported.
func TestDirectThroughWatchListSemantics(t *testing.T) {
	ours := listwatch.NewREST(listwatch.REST{}, nil)
	wrapped := clientgocache.ToListWatcherWithWatchListSemantics(ours, nil)
	if !listwatch.Direct(wrapped) {
		t.Fatal("our ListWatch inside client-go's WatchList semantics is not direct")
	}
	if listwatch.Direct(clientgocache.ToListWatcherWithWatchListSemantics(&clientgocache.ListWatch{}, nil)) {
		t.Fatal("another ListWatch inside it is direct")
	}
	typ := reflect.TypeOf(wrapped)
	if f := typ.Elem().Field(0); !f.Anonymous || f.Type != reflect.TypeOf(ours) {
		t.Fatalf("client-go's wrapper no longer embeds the ListWatch first: %v", f)
	}
	own := map[string]bool{}
	for i := range typ.NumMethod() {
		own[typ.Method(i).Name] = true
	}
	for i := range reflect.TypeOf(ours).NumMethod() {
		delete(own, reflect.TypeOf(ours).Method(i).Name)
	}
	if len(own) != 1 || !own["IsWatchListSemanticsUnSupported"] {
		t.Fatalf("client-go's wrapper has methods of its own beyond IsWatchListSemanticsUnSupported: %v", own)
	}
}
