package cache

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	restclient "k8s.io/client-go/rest"
	clientgocache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache/internal/listwatch"
	"github.com/kreflector/cache/internal/podgen"
)

// relistServer serves Pods in protobuf (in JSON when json is set), as
// kube-apiserver serves a clientset: each LIST the current list whole; the first WATCH calls
// expire, then answers 410, so that the Reflector relists; each later
// WATCH stays open and silent, and the second closes watching: the
// relist's counts are in the Reflector's Stats by then.
type relistServer struct {
	expire   func()
	watching chan struct{}
	json     bool

	mu      sync.Mutex
	pods    []corev1.Pod
	rv      string
	watches int
}

func (s *relistServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("watch") == "true" {
		s.watch(w, r)
		return
	}
	s.mu.Lock()
	list := &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"},
		ListMeta: metav1.ListMeta{ResourceVersion: s.rv}, Items: s.pods}
	var body bytes.Buffer
	var enc runtime.Encoder = protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	ct := "application/vnd.kubernetes.protobuf"
	if s.json {
		enc, ct = jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, jsonserializer.SerializerOptions{}), "application/json"
	}
	err := enc.Encode(list, &body)
	s.mu.Unlock()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", ct)
	w.Write(body.Bytes())
}

func (s *relistServer) watch(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.watches++
	n := s.watches
	s.mu.Unlock()
	if n == 1 {
		s.expire()
		st := apierrors.NewResourceExpired("too old resource version").Status()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusGone)
		w.Write([]byte(runtime.EncodeOrDie(scheme.Codecs.LegacyCodec(metav1.SchemeGroupVersion), &st)))
		return
	}
	if n == 2 {
		close(s.watching)
	}
	if s.json {
		w.Header().Set("Content-Type", "application/json")
	} else {
		w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf;stream=watch")
	}
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

// serve makes the next LISTs answer pods at rv.
func (s *relistServer) serve(pods []corev1.Pod, rv string) {
	s.mu.Lock()
	s.pods, s.rv = pods, rv
	s.mu.Unlock()
}

// relistPods are n realistic Pods at resourceVersion rv, but those in
// changed, at rv+1.
func relistPods(n int, changed map[int]bool) []corev1.Pod {
	out := make([]corev1.Pod, n)
	for i := range n {
		rv := 100
		if changed[i] {
			rv = 200
		}
		out[i] = *podgen.Pod(i, rv)
	}
	return out
}

// A relist through our own ListWatch, in protobuf or JSON, does not
// decode the Pods the informer holds at the resourceVersion listed: the store keeps
// the object it held (the same one), counted in ItemsNotDecoded, and ends
// holding exactly the server's list; changed, added and removed Pods are
// decoded as ever. A ListWatch wrapping ours is given whole lists, every
// item decoded; the held objects are still kept (after decoding). A
// dynamic informer's unstructured Pods, in JSON, likewise.
func TestRelistLeavesHeldPodsUndecoded(t *testing.T) {
	for _, c := range []relistCase{
		{name: "indexer"}, {name: "compact", compact: true}, {name: "wrapped", wrap: true},
		{name: "indexer, JSON", json: true}, {name: "compact, JSON", compact: true, json: true},
		{name: "dynamic", json: true, dynamic: true}, {name: "dynamic, compact", compact: true, json: true, dynamic: true},
	} {
		t.Run(c.name, func(t *testing.T) { testRelistUndecoded(t, c) })
	}
}

// relistCase is one informer of TestRelistLeavesHeldPodsUndecoded: on a
// compact store; through a ListWatch wrapping ours; in JSON; dynamic
// (unstructured, in JSON).
type relistCase struct {
	name                         string
	compact, wrap, json, dynamic bool
}

// informer is c's Pod informer on a server at url.
func (c relistCase) informer(url string) SharedIndexInformer {
	cfg := &restclient.Config{Host: url, ContentConfig: restclient.ContentConfig{
		ContentType: "application/vnd.kubernetes.protobuf", AcceptContentTypes: "application/vnd.kubernetes.protobuf"}}
	if c.json {
		cfg.ContentConfig = restclient.ContentConfig{}
	}
	if c.dynamic {
		lw := listwatch.Dynamic(dynamic.NewForConfigOrDie(cfg), corev1.SchemeGroupVersion.WithResource("pods"), "", nil)
		return NewSharedIndexInformer(lw, &unstructured.Unstructured{}, 0, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
	}
	lw := listwatch.Typed(kubernetes.NewForConfigOrDie(cfg).CoreV1().Pods(""), "pods", nil)
	if c.wrap {
		inner := lw.ListWithContextFunc
		lw.ListWithContextFunc = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return inner(ctx, o) }
	}
	return NewSharedIndexInformer(lw, &corev1.Pod{}, 0, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
}

// asPod is obj, a Pod or an unstructured one, as a typed Pod without
// TypeMeta.
func asPod(obj any) (*corev1.Pod, bool) {
	switch o := obj.(type) {
	case *corev1.Pod:
		return o, true
	case *unstructured.Unstructured:
		p := &corev1.Pod{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, p); err != nil {
			return nil, false
		}
		p.TypeMeta = metav1.TypeMeta{}
		return p, true
	}
	return nil, false
}

func testRelistUndecoded(t *testing.T, c relistCase) {
	const n = 40
	// The relist's answer: Pods 3 and 7 changed, 39 gone, 40 new.
	second := append(relistPods(n-1, map[int]bool{3: true, 7: true}), *podgen.Pod(n, 200))
	var before map[string]any
	var inf SharedIndexInformer
	srv := &relistServer{watching: make(chan struct{}), json: c.json}
	// The informer's store is written after its queue: the first watch
	// waits until every Pod of the first LIST has reached the handler (so
	// the store), so the relist finds them all held.
	added := make(chan struct{})
	srv.expire = func() {
		select {
		case <-added:
		case <-time.After(time.Minute):
			t.Error("the first LIST did not reach the handler within a minute")
			return
		}
		before = heldByKey(inf.GetStore())
		srv.serve(second, "200")
	}
	srv.serve(relistPods(n, nil), "100")
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close) // after runRelisting's: the informer leaves the server first
	inf = c.informer(hs.URL)
	o := ReflectorOptions{UseWatchList: ptr.To(false)}
	if c.compact {
		o.Compact = &CompactOptions{}
	}
	if err := inf.(ReflectorConfigurable).SetReflectorOptions(o); err != nil {
		t.Fatal(err)
	}
	runRelisting(t, inf, n, added, srv.watching)
	st := inf.(InformerHealthReporter).Stats().Reflector
	wantUndecoded := uint64(n - 3) // all but 3, 7 and 39
	if c.wrap {
		wantUndecoded = 0
	}
	if st.ItemsReused != uint64(n-3) || st.ItemsNotDecoded != wantUndecoded {
		t.Fatalf("ItemsReused %d, ItemsNotDecoded %d; want %d and %d", st.ItemsReused, st.ItemsNotDecoded, n-3, wantUndecoded)
	}
	checkRelistedPods(t, inf.GetStore(), before, second, c.compact)
}

// runRelisting runs inf with a handler that closes synced once n Pods
// were added (the first sync is in the store) until the test ends, and
// waits, for up to a minute each, until serverSaw is closed and the
// relist's one delete (Pod 39) has reached the handler: the relist is
// then in the store.
func runRelisting(t *testing.T, inf SharedIndexInformer, n int, synced chan struct{}, serverSaw <-chan struct{}) {
	t.Helper()
	adds := 0
	deleted := make(chan struct{})
	inf.AddEventHandler(clientgocache.ResourceEventHandlerFuncs{
		AddFunc: func(any) {
			if adds++; adds == n {
				close(synced)
			}
		},
		DeleteFunc: func(any) { close(deleted) },
	})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { inf.RunWithContext(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	for _, ch := range []<-chan struct{}{serverSaw, deleted} {
		select {
		case <-ch:
		case <-time.After(time.Minute):
			t.Fatalf("no relist within a minute: %+v", inf.(InformerHealthReporter).Stats().Reflector)
		}
	}
}

// checkRelistedPods fails t unless store holds exactly second, and, but for
// a compact store (whose records are new objects on every read), holds
// each Pod that did not change (at resourceVersion 100) as the very
// object it held before the relist.
func checkRelistedPods(t *testing.T, store clientgocache.Store, before map[string]any, second []corev1.Pod, compact bool) {
	t.Helper()
	after := heldByKey(store)
	if len(after) != len(second) {
		t.Fatalf("%d objects after the relist, want %d", len(after), len(second))
	}
	for i := range second {
		want := &second[i]
		held := after[want.Namespace+"/"+want.Name]
		if got, ok := asPod(held); !ok || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s/%s after the relist is not the server's", want.Namespace, want.Name)
		}
		if old, ok := before[want.Namespace+"/"+want.Name]; !compact && ok && want.ResourceVersion == "100" && old != held {
			t.Fatalf("%s/%s is another object than the one held", want.Namespace, want.Name)
		}
	}
}

// heldByKey is every object store holds, by key.
func heldByKey(store clientgocache.Store) map[string]any {
	out := map[string]any{}
	for _, key := range store.ListKeys() {
		obj, _, _ := store.GetByKey(key)
		out[key] = obj
	}
	return out
}
