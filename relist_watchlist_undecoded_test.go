package cache

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache/cachetest"
	"github.com/kreflector/cache/internal/listhint"
	"github.com/kreflector/cache/internal/podgen"
)

// watchListServer serves Pods as kube-apiserver serves a WatchList, in
// protobuf or (json) JSON: each WATCH with sendInitialEvents streams the
// current Pods as ADDED events, then the initial-events-end bookmark.
// The first such stream then ends, so the Reflector streams again (a
// watch that ends that soon is retried by WatchList); the second calls
// expire first, and stays open until the client leaves. Plain WATCHes
// are answered 410.
type watchListServer struct {
	json     bool
	expire   func()
	relisted chan struct{} // closed when the second initial stream has ended its initial events

	mu         sync.Mutex
	pods       []corev1.Pod
	rv         string
	watchLists int
}

func (s *watchListServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("watch") != "true" {
		http.Error(w, "only WatchList is served", http.StatusBadRequest)
		return
	}
	if r.URL.Query().Get("sendInitialEvents") != "true" {
		st := apierrors.NewResourceExpired("too old resource version").Status()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusGone)
		w.Write([]byte(runtime.EncodeOrDie(scheme.Codecs.LegacyCodec(metav1.SchemeGroupVersion), &st)))
		return
	}
	s.mu.Lock()
	s.watchLists++
	n := s.watchLists
	s.mu.Unlock()
	if n == 2 {
		s.expire()
	}
	s.mu.Lock()
	pods, rv := s.pods, s.rv
	s.mu.Unlock()
	write, ct := writeProtoEvent, "application/vnd.kubernetes.protobuf;stream=watch"
	if s.json {
		write, ct = writeJSONEvent, "application/json"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(http.StatusOK)
	for i := range pods {
		if err := write(w, watch.Added, &pods[i]); err != nil {
			return
		}
	}
	end := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv, Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	if write(w, watch.Bookmark, end) != nil {
		return
	}
	w.(http.Flusher).Flush()
	if n == 1 {
		return
	}
	if n == 2 {
		close(s.relisted)
	}
	<-r.Context().Done()
}

// serve makes the next initial streams send pods at rv.
func (s *watchListServer) serve(pods []corev1.Pod, rv string) {
	s.mu.Lock()
	s.pods, s.rv = pods, rv
	s.mu.Unlock()
}

// writeProtoEvent writes one length-prefixed protobuf WatchEvent frame
// of obj, as kube-apiserver frames a watch.
func writeProtoEvent(w http.ResponseWriter, typ watch.EventType, obj runtime.Object) error {
	var raw bytes.Buffer
	enc := scheme.Codecs.EncoderForVersion(protobuf.NewSerializer(scheme.Scheme, scheme.Scheme), corev1.SchemeGroupVersion)
	if err := enc.Encode(obj, &raw); err != nil {
		return err
	}
	ev := metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: raw.Bytes()}}
	data, err := ev.Marshal()
	if err != nil {
		return err
	}
	if err := binary.Write(w, binary.BigEndian, uint32(len(data))); err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// writeJSONEvent writes one WatchEvent of obj in JSON, as kube-apiserver
// writes a JSON watch: compact, one per line, the object with its
// apiVersion and kind.
func writeJSONEvent(w http.ResponseWriter, typ watch.EventType, obj runtime.Object) error {
	raw, err := runtime.Encode(scheme.Codecs.LegacyCodec(corev1.SchemeGroupVersion), obj)
	if err != nil {
		return err
	}
	data, err := json.Marshal(metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: raw}})
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

// A relist by WatchList through our own ListWatch does not decode the
// Pods the informer holds at the resourceVersion streamed: their initial
// ADDED events stand for the held objects, counted in ItemsNotDecoded,
// and the store ends holding exactly the server's Pods. So in protobuf
// and JSON, on an indexer and a compact store, and for a dynamic
// informer's unstructured Pods.
func TestWatchListRelistLeavesHeldPodsUndecoded(t *testing.T) {
	for _, c := range []relistCase{
		{name: "indexer"}, {name: "compact", compact: true},
		{name: "indexer, JSON", json: true}, {name: "compact, JSON", compact: true, json: true},
		{name: "dynamic", json: true, dynamic: true}, {name: "dynamic, compact", compact: true, json: true, dynamic: true},
	} {
		t.Run(c.name, func(t *testing.T) { testWatchListUndecoded(t, c) })
	}
}

func testWatchListUndecoded(t *testing.T, c relistCase) {
	const n = 40
	// The relist's answer: Pods 3 and 7 changed, 39 gone, 40 new.
	second := append(relistPods(n-1, map[int]bool{3: true, 7: true}), *podgen.Pod(n, 200))
	var before map[string]any
	var inf SharedIndexInformer
	srv := &watchListServer{relisted: make(chan struct{}), json: c.json}
	synced := make(chan struct{})
	srv.expire = func() {
		select {
		case <-synced:
		case <-time.After(time.Minute):
			t.Error("the first WatchList did not reach the handler within a minute")
			return
		}
		before = heldByKey(inf.GetStore())
		srv.serve(second, "200")
	}
	srv.serve(relistPods(n, nil), "100")
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close) // after runRelisting's: the informer leaves the server first
	inf = c.informer(hs.URL)
	o := ReflectorOptions{UseWatchList: ptr.To(true)}
	if c.compact {
		o.Compact = &CompactOptions{}
	}
	if err := inf.(ReflectorConfigurable).SetReflectorOptions(o); err != nil {
		t.Fatal(err)
	}
	runRelisting(t, inf, n, synced, srv.relisted)
	// The WatchList's figures are counted once its Replace returns, which
	// may be after the handler had the relist's delete.
	st := inf.(InformerHealthReporter).Stats().Reflector
	for deadline := time.Now().Add(time.Minute); st.ItemsReused < n-3 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		st = inf.(InformerHealthReporter).Stats().Reflector
	}
	// Each decoding goroutine decodes its first object of a kind whole,
	// learning its type from it: up to GOMAXPROCS of the held Pods.
	least := uint64(n - 3 - goruntime.GOMAXPROCS(0))
	if st.ItemsReused != n-3 || st.ItemsNotDecoded < least || st.ItemsNotDecoded > n-3 {
		t.Fatalf("ItemsReused %d, ItemsNotDecoded %d; want %d and %d to %d", st.ItemsReused, st.ItemsNotDecoded, n-3, least, n-3)
	}
	checkRelistedPods(t, inf.GetStore(), before, second, c.compact)
}

// A stand-in for a held object outside a WatchList's initial events (a
// ListWatch breaking its promise) is never stored: the watch ends with
// ErrUnexpectedObject, and it counts as dropped.
func TestStandinOutsideInitialEventsIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		list := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "5"}}
		lw := newScript([]listReply{{list: list}}, nil)
		store := cachetest.NewRecordingStore(nil)
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, ReflectorOptions{UseWatchList: ptr.To(false)})
		startReflector(t, r)
		<-lw.drained
		w := lw.current(t)
		// Nothing is sent after it: the Reflector stops the watch.
		w.Add(&listhint.Standin{Held: cm("x", "6"), ResourceVersion: "6"})
		synctest.Wait()
		for _, c := range store.CallStrings() {
			if strings.Contains(c, "ns/x") {
				t.Fatalf("the stand-in reached the store: %q", store.CallStrings())
			}
		}
		if n := r.Stats().Events[EventDropped]; n != 1 {
			t.Fatalf("dropped events %d, want the stand-in's 1", n)
		}
		if err := r.Health().LastError; err == nil || !errors.Is(err, ErrUnexpectedObject) {
			t.Fatalf("last error %v, want ErrUnexpectedObject", err)
		}
	})
}

// A WatchList's gathered objects may be a compact store's records (held
// objects reused, or stood in for): a MODIFIED or DELETED event before
// the initial-events-end bookmark keys them by their own key.
func TestGatheredRecordsAreKeyed(t *testing.T) {
	e := newInitialEvents(cachetest.NewRecordingStore(nil), nil, false)
	if err := e.addHeld(&compactRecord{key: "ns/a"}); err != nil {
		t.Fatal(err)
	}
	if err := e.addHeld(&compactRecord{key: "ns/b"}); err != nil {
		t.Fatal(err)
	}
	if err := e.Update(cm("a", "9")); err != nil {
		t.Fatal(err)
	}
	if err := e.Delete(cm("b", "10")); err != nil {
		t.Fatal(err)
	}
	got := e.take()
	if len(got) != 1 || resourceVersionOf(got[0]) != "9" || e.reused != 2 || e.notDecoded != 2 {
		t.Fatalf("gathered %v (reused %d, not decoded %d); want only ns/a at 9, 2 and 2", got, e.reused, e.notDecoded)
	}
}
