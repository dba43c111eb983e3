package bench

import (
	"bytes"
	"encoding/binary"
	stdjson "encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/watch"
	clientgoinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	clientgocache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/informers"
	"github.com/kreflector/cache/internal/podgen"
)

// BenchmarkRelistOverHTTP measures one relist of a Pod informer from its
// factory, over a real clientset talking protobuf (JSON with
// KREFLECTOR_RELIST_ENCODING=json) over HTTP to a server in this process,
// side by side with client-go (with KREFLECTOR_RELIST_WATCHLIST=1 the
// server streams WatchLists instead of answering LISTs: the sync and the
// relist are each a WatchList's initial events): the informer syncs
// KREFLECTOR_RELIST_PODS realistic Pods (default 20000) in LIST pages of
// 500, its first watch is answered 410 Expired, and the LIST that follows
// finds every twentieth Pod changed. Measured from that LIST's first
// request until the one handler has had every notification of the relist
// (an update per Pod): wall time, the process's CPU time, the bytes
// allocated (what the collector then has to reclaim), and how many listed
// Pods were not decoded (Stats.ItemsNotDecoded; ours only); each the
// median of the b.N runs, one after the other in this process. The server's
// pages are encoded beforehand; its own CPU during the relist (copying
// them out) is in the figures, the same for every implementation.
//
//	KREFLECTOR_RELIST_PODS=100000 go test -run '^$' -bench BenchmarkRelistOverHTTP -benchtime 5x ./bench/
func BenchmarkRelistOverHTTP(b *testing.B) {
	n, err := strconv.Atoi(cmpEnv("KREFLECTOR_RELIST_PODS", "20000"))
	if err != nil || n < relistPage {
		b.Fatalf("bad KREFLECTOR_RELIST_PODS (%v)", err)
	}
	json := false
	switch enc := cmpEnv("KREFLECTOR_RELIST_ENCODING", "protobuf"); enc {
	case "json":
		json = true
	case "protobuf":
	default:
		b.Fatalf("KREFLECTOR_RELIST_ENCODING %q: want protobuf or json", enc)
	}
	before, err := relistPages(n, 0, json)
	if err != nil {
		b.Fatal(err)
	}
	after, err := relistPages(n, 20, json)
	if err != nil {
		b.Fatal(err)
	}
	var streams [][]byte
	if cmpEnv("KREFLECTOR_RELIST_WATCHLIST", "") == "1" {
		streams = [][]byte{relistStream(n, 0, json), relistStream(n, 20, json)}
	}
	for _, impl := range []string{"client-go", "kreflector", "kreflector+compact"} {
		b.Run(impl, func(b *testing.B) {
			var runs []relistFigures
			for range b.N {
				f, err := runRelist(impl, n, &relistServer{before: before, after: after, json: json, streams: streams})
				if err != nil {
					b.Fatal(err)
				}
				runs = append(runs, f)
			}
			med := func(f func(relistFigures) float64) float64 {
				vs := make([]float64, len(runs))
				for i, r := range runs {
					vs[i] = f(r)
				}
				slices.Sort(vs)
				return vs[(len(vs)-1)/2]
			}
			b.ReportMetric(med(func(r relistFigures) float64 { return r.wall.Seconds() * 1000 }), "relist-ms")
			b.ReportMetric(med(func(r relistFigures) float64 { return r.cpu.Seconds() * 1000 }), "relist-cpu-ms")
			b.ReportMetric(med(func(r relistFigures) float64 { return float64(r.alloc) / (1 << 20) }), "relist-MiB-alloc")
			b.ReportMetric(med(func(r relistFigures) float64 { return float64(r.notDecoded) }), "not-decoded")
		})
	}
}

// relistPage is the page size of the server's LISTs.
const relistPage = 500

// relistPages encodes n realistic Pods in protobuf (or JSON) LIST pages
// of relistPage, at resourceVersion 100, but every every-th Pod (none
// when every is 0) at 200; the list's resourceVersion is the highest.
func relistPages(n, every int, json bool) ([][]byte, error) {
	listRV := "100"
	if every > 0 {
		listRV = "200"
	}
	var ser apiruntime.Encoder = protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	if json {
		ser = jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, jsonserializer.SerializerOptions{})
	}
	var pages [][]byte
	for from := 0; from < n; from += relistPage {
		list := &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"},
			ListMeta: metav1.ListMeta{ResourceVersion: listRV}}
		for i := from; i < min(from+relistPage, n); i++ {
			rv := 100
			if every > 0 && i%every == 0 {
				rv = 200
			}
			list.Items = append(list.Items, *podgen.Pod(i, rv))
		}
		if from+relistPage < n {
			list.Continue = "page-" + strconv.Itoa(len(pages)+1)
		}
		var buf bytes.Buffer
		if err := ser.Encode(list, &buf); err != nil {
			return nil, err
		}
		pages = append(pages, buf.Bytes())
	}
	return pages, nil
}

// relistFigures are one relist's costs.
type relistFigures struct {
	wall, cpu  time.Duration
	alloc      uint64
	notDecoded uint64
}

// relistServer answers LISTs from before until its first watch, which it
// answers 410 Expired, and from after from then on; the first LIST after
// that starts the measure. Later watches stay open and silent. It refuses
// WatchList requests, as a server without the feature does: client-go's
// Reflector, which asks for one first where its gate is on (the default),
// then LISTs.
type relistServer struct {
	before, after [][]byte
	json          bool // the pages are JSON
	// streams, if set, are the WatchLists' initial events (before's,
	// then after's): the first WatchList streams streams[0] and ends, the
	// next ones streams[1] (the relist, measured) and stay open.
	streams   [][]byte
	watchList int

	mu      sync.Mutex
	expired bool
	started bool
	watches int
	start   relistMark
}

// relistMark is the process's clock, CPU time and allocated bytes.
type relistMark struct {
	at    time.Time
	cpu   time.Duration
	alloc uint64
}

func markNow() relistMark {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return relistMark{at: time.Now(), cpu: processCPU(), alloc: ms.TotalAlloc}
}

func (s *relistServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("watch") == "true" {
		s.serveWatch(w, r)
		return
	}
	page := 0
	if c := q.Get("continue"); c != "" {
		page, _ = strconv.Atoi(strings.TrimPrefix(c, "page-"))
	}
	s.mu.Lock()
	pages := s.before
	if s.expired {
		pages = s.after
		if !s.started {
			s.started, s.start = true, markNow()
		}
	}
	s.mu.Unlock()
	if page < 0 || page >= len(pages) {
		http.Error(w, "no such page", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", s.mediaType(""))
	w.Write(pages[page])
}

func (s *relistServer) serveWatch(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("sendInitialEvents") == "true" {
		s.serveWatchList(w, r)
		return
	}
	s.mu.Lock()
	s.watches++
	first := s.watches == 1
	s.expired = true
	s.mu.Unlock()
	if first {
		writeStatus(w, apierrors.NewResourceExpired("too old resource version"))
		return
	}
	w.Header().Set("Content-Type", s.mediaType(";stream=watch"))
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

// serveWatchList streams a WatchList's initial events (see streams), or
// refuses it as a server without the feature does.
func (s *relistServer) serveWatchList(w http.ResponseWriter, r *http.Request) {
	if s.streams == nil {
		writeStatus(w, apierrors.NewBadRequest("sendInitialEvents is not supported"))
		return
	}
	s.mu.Lock()
	s.watchList++
	first := s.watchList == 1
	if !first && !s.started {
		s.expired, s.started, s.start = true, true, markNow()
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", s.mediaType(";stream=watch"))
	w.WriteHeader(http.StatusOK)
	if first {
		w.Write(s.streams[0])
		return
	}
	w.Write(s.streams[1])
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

// relistStream is relistPages' Pods as a WatchList's initial events in
// protobuf (or JSON), the list's resourceVersion in the
// initial-events-end bookmark.
func relistStream(n, every int, json bool) []byte {
	listRV := "100"
	if every > 0 {
		listRV = "200"
	}
	var buf bytes.Buffer
	for i := range n {
		rv := 100
		if every > 0 && i%every == 0 {
			rv = 200
		}
		writeWatchFrame(&buf, watch.Added, podgen.Pod(i, rv), json)
	}
	end := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: listRV, Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	writeWatchFrame(&buf, watch.Bookmark, end, json)
	return buf.Bytes()
}

// writeWatchFrame appends a WatchEvent of obj to buf, as kube-apiserver
// frames a watch: length-prefixed protobuf, or (json) a line of JSON.
func writeWatchFrame(buf *bytes.Buffer, typ watch.EventType, obj apiruntime.Object, json bool) {
	var ser apiruntime.Encoder = protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	if json {
		ser = jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, jsonserializer.SerializerOptions{})
	}
	raw, err := apiruntime.Encode(scheme.Codecs.EncoderForVersion(ser, corev1.SchemeGroupVersion), obj)
	if err != nil {
		panic(err)
	}
	ev := metav1.WatchEvent{Type: string(typ), Object: apiruntime.RawExtension{Raw: raw}}
	if json {
		if err := stdjson.NewEncoder(buf).Encode(&ev); err != nil {
			panic(err)
		}
		return
	}
	data, err := ev.Marshal()
	if err != nil {
		panic(err)
	}
	binary.Write(buf, binary.BigEndian, uint32(len(data)))
	buf.Write(data)
}

// mediaType is the pages' media type; protobuf's with suffix.
func (s *relistServer) mediaType(suffix string) string {
	if s.json {
		return "application/json"
	}
	return "application/vnd.kubernetes.protobuf" + suffix
}

// writeStatus answers err's status, in JSON.
func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	st := err.Status()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	w.Write([]byte(apiruntime.EncodeOrDie(scheme.Codecs.LegacyCodec(metav1.SchemeGroupVersion), &st)))
}

// runRelist syncs impl's Pod informer from a new server, then measures
// its relist (see BenchmarkRelistOverHTTP).
func runRelist(impl string, n int, srv *relistServer) (relistFigures, error) {
	hs := httptest.NewServer(srv)
	defer hs.Close()
	cs, err := protobufClientset(hs.URL)
	if srv.json {
		cs, err = kubernetes.NewForConfig(&rest.Config{Host: hs.URL, QPS: -1})
	}
	if err != nil {
		return relistFigures{}, err
	}
	inf, stats, err := relistInformer(impl, cs, srv.streams != nil)
	if err != nil {
		return relistFigures{}, err
	}
	h := &memHandler{}
	if _, err := inf.AddEventHandler(h); err != nil {
		return relistFigures{}, err
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { inf.Run(stop); close(done) }()
	defer func() { close(stop); <-done }()
	// n adds, then an update for each Pod of the relist.
	if err := h.wait(int64(2 * n)); err != nil {
		return relistFigures{}, err
	}
	end := markNow()
	srv.mu.Lock()
	start, started := srv.start, srv.started
	srv.mu.Unlock()
	if !started {
		return relistFigures{}, fmt.Errorf("relist: %s did not relist", impl)
	}
	srv.mu.Lock()
	watchLists := srv.watchList
	srv.mu.Unlock()
	if srv.streams != nil && watchLists < 2 {
		return relistFigures{}, fmt.Errorf("relist: %s did not relist by WatchList", impl)
	}
	f := relistFigures{wall: end.at.Sub(start.at), cpu: end.cpu - start.cpu, alloc: end.alloc - start.alloc}
	if stats != nil {
		f.notDecoded = stats().ItemsNotDecoded
	}
	return f, nil
}

// protobufClientset is a clientset of the server at url that talks
// protobuf, unthrottled.
func protobufClientset(url string) (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(&rest.Config{Host: url, QPS: -1, ContentConfig: rest.ContentConfig{
		ContentType: "application/vnd.kubernetes.protobuf", AcceptContentTypes: "application/vnd.kubernetes.protobuf"}})
}

// relistInformer is impl's Pod informer from its factory (ours by
// WatchList only if watchList; client-go's as its gate says, on by
// default), and for ours how to read its Reflector's Stats.
func relistInformer(impl string, cs kubernetes.Interface, watchList bool) (clientgocache.SharedIndexInformer, func() cache.Stats, error) {
	if impl == "client-go" {
		return clientgoinformers.NewSharedInformerFactory(cs, 0).Core().V1().Pods().Informer(), nil, nil
	}
	if impl != "kreflector" && impl != "kreflector+compact" {
		return nil, nil, fmt.Errorf("relist: no implementation %q (there are client-go, kreflector, kreflector+compact)", impl)
	}
	inf := informers.NewSharedInformerFactory(cs, 0).Core().V1().Pods().Informer()
	o := cache.ReflectorOptions{UseWatchList: ptr.To(watchList)}
	if impl == "kreflector+compact" {
		o.Compact = &cache.CompactOptions{}
	}
	if err := inf.(cache.ReflectorConfigurable).SetReflectorOptions(o); err != nil {
		return nil, nil, err
	}
	reporter := inf.(cache.InformerHealthReporter)
	return inf, func() cache.Stats { return reporter.Stats().Reflector }, nil
}
