package listwatch_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	restclient "k8s.io/client-go/rest"

	"github.com/kreflector/cache/internal/inflate/gztest"
	"github.com/kreflector/cache/internal/podgen"
)

// gzipThreshold is the size over which kube-apiserver compresses a
// response to a client that accepts gzip.
const gzipThreshold = 128 << 10

// zipServer answers a LIST with n realistic Pods (protobuf if the Accept
// header asks for it first, else JSON) and a WATCH with n ADDED events and
// a bookmark (JSON), compressing as kube-apiserver does when compress is
// set: level 1, bodies over 128 KiB, only for requests whose
// Accept-Encoding says gzip. damage, if set, replaces each compressed body.
// It records every request with all its headers.
type zipServer struct {
	n        int
	compress bool
	damage   func(gz []byte) []byte

	mu     sync.Mutex
	seen   []string
	zipped int
	bodies map[string][]byte // by content type and query
}

func (s *zipServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.seen = append(s.seen, requestLine(r))
	s.mu.Unlock()
	ct, body := s.cached(r)
	w.Header().Set("Content-Type", ct)
	if s.compress && len(body) > gzipThreshold && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		body = gztest.Gzip(body)
		if s.damage != nil {
			body = s.damage(body)
		}
		w.Header().Set("Content-Encoding", "gzip")
		s.mu.Lock()
		s.zipped++
		s.mu.Unlock()
	}
	w.Write(body)
}

// requestLine is a request's method, URL and every header, sorted.
func requestLine(r *http.Request) string {
	var h []string
	for k, v := range r.Header {
		h = append(h, k+"="+strings.Join(v, ","))
	}
	slices.Sort(h)
	return r.Method + " " + r.URL.String() + " " + strings.Join(h, " ")
}

// cached is body's answer, made once per Accept header and query.
func (s *zipServer) cached(r *http.Request) (string, []byte) {
	key := r.Header.Get("Accept") + " " + r.URL.RawQuery
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bodies == nil {
		s.bodies = map[string][]byte{}
	}
	if _, ok := s.bodies[key]; !ok {
		ct, body := s.body(r)
		s.bodies[key], s.bodies["ct "+key] = body, []byte(ct)
	}
	return string(s.bodies["ct "+key]), s.bodies[key]
}

// body is the response to r and its content type.
func (s *zipServer) body(r *http.Request) (string, []byte) {
	pods := make([]corev1.Pod, s.n)
	for i := range pods {
		pods[i] = *podgen.Pod(i, 10)
		pods[i].TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
	}
	if r.URL.Query().Get("watch") == "true" {
		var b bytes.Buffer
		for i := range pods {
			if strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadata") {
				pods[i].TypeMeta = metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"}
			}
			raw, _ := json.Marshal(&pods[i])
			json.NewEncoder(&b).Encode(&metav1.WatchEvent{Type: string(watch.Added), Object: runtime.RawExtension{Raw: raw}})
		}
		bm, _ := json.Marshal(&corev1.Pod{TypeMeta: pods[0].TypeMeta, ObjectMeta: metav1.ObjectMeta{ResourceVersion: "11"}})
		json.NewEncoder(&b).Encode(&metav1.WatchEvent{Type: string(watch.Bookmark), Object: runtime.RawExtension{Raw: bm}})
		return "application/json", b.Bytes()
	}
	list := &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: "10"}, Items: pods}
	if strings.HasPrefix(r.Header.Get("Accept"), "application/vnd.kubernetes.protobuf") {
		enc, _ := podgen.Codec("protobuf")
		var b bytes.Buffer
		enc.Encode(list, &b)
		return "application/vnd.kubernetes.protobuf", b.Bytes()
	}
	raw, _ := json.Marshal(list)
	return "application/json", raw
}

func (s *zipServer) take() (seen []string, zipped int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen, zipped = s.seen, s.zipped
	s.seen, s.zipped = nil, 0
	return seen, zipped
}

// protobufConfig is cfg asking for protobuf first, as a clientset does
// when so configured.
func protobufConfig(cfg restclient.Config) *restclient.Config {
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return &cfg
}

// TestCompressionStaysTheClientsChoice: with a server that compresses as
// kube-apiserver does and one that does not, and a client that accepts
// gzip (client-go's default, over HTTP/2 here), one with DisableCompression
// and one on a transport of its own (HTTP/1), each ListWatch sends the
// requests its client sends (every header: Accept-Encoding only where the
// transport adds it) and returns the same lists and events.
func TestCompressionStaysTheClientsChoice(t *testing.T) {
	srv := &zipServer{n: 40}
	hs := httptest.NewUnstartedServer(srv)
	hs.EnableHTTP2 = true
	hs.StartTLS()
	defer hs.Close()
	tlsCfg := restclient.TLSClientConfig{Insecure: true} // client-go makes a transport of its own only with TLS options
	own := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	defer own.CloseIdleConnections()
	for _, tc := range []struct {
		name     string
		compress bool
		cfg      restclient.Config
		zipped   bool
	}{
		{"compressing server", true, restclient.Config{Host: hs.URL, TLSClientConfig: tlsCfg}, true},
		{"server not compressing", false, restclient.Config{Host: hs.URL, TLSClientConfig: tlsCfg}, false},
		{"DisableCompression", true, restclient.Config{Host: hs.URL, TLSClientConfig: tlsCfg, DisableCompression: true}, false},
		{"a transport of its own", true, restclient.Config{Host: hs.URL, Transport: own}, true},
	} {
		srv.compress = tc.compress
		for _, cfg := range []*restclient.Config{&tc.cfg, protobufConfig(tc.cfg)} {
			for _, p := range pairs(t, cfg) {
				name := fmt.Sprintf("%s/%s/%s", tc.name, cfg.ContentType, p.name)
				sameAsClient(t, name, srv, p, tc.zipped)
			}
		}
	}
}

// sameAsClient checks that p's ListWatch lists and watches as its client
// does, through srv, which compressed (a LIST and a WATCH each) if zipped.
func sameAsClient(t *testing.T, name string, srv *zipServer, p pair, zipped bool) {
	t.Helper()
	ctx := context.Background()
	opts := metav1.ListOptions{ResourceVersion: "0"}
	want, wantErr := p.client(ctx, opts)
	wantEvents := drain(t, p.watch(ctx, opts))
	wantReq, wantZipped := srv.take()
	got, err := p.ours.ListWithContext(ctx, opts)
	w, werr := p.ours.WatchWithContext(ctx, opts)
	if werr != nil {
		t.Fatalf("%s: %v", name, werr)
	}
	gotEvents := drain(t, w)
	gotReq, gotZipped := srv.take()
	if !reflect.DeepEqual(gotReq, wantReq) {
		t.Errorf("%s: requests\n%q\nwant (the client's)\n%q", name, gotReq, wantReq)
	}
	if gotZipped != wantZipped || (wantZipped == 2) != zipped {
		t.Errorf("%s: %d responses compressed, the client's %d; want both compressed: %v", name, gotZipped, wantZipped, zipped)
	}
	if fmt.Sprint(err) != fmt.Sprint(wantErr) || (wantErr == nil && !reflect.DeepEqual(got, want)) {
		t.Errorf("%s: list or error (%v) not the client's (%v)", name, err, wantErr)
	}
	if len(wantEvents) != srv.n+1 || !reflect.DeepEqual(gotEvents, wantEvents) {
		t.Errorf("%s: events\n%v\nwant (the client's)\n%v", name, gotEvents, wantEvents)
	}
}

// TestDamagedCompressedBodiesFailAsTheirClients: compressed LIST and
// WATCH bodies damaged at every position class (gztest.Damaged) give each
// ListWatch the error, or the events, its client gets.
func TestDamagedCompressedBodiesFailAsTheirClients(t *testing.T) {
	srv := &zipServer{n: 45, compress: true} // over 128 KiB in protobuf too
	hs := httptest.NewServer(srv)
	defer hs.Close()
	cfg := restclient.Config{Host: hs.URL}
	js, proto := pairs(t, &cfg), pairs(t, protobufConfig(cfg))
	all := []pair{js[0], js[3], proto[0]} // typed, metadata; typed in protobuf
	ctx := context.Background()
	for k, d := range gztest.Damaged(gztest.Gzip(bytes.Repeat([]byte("x"), 100))) {
		srv.damage = func(gz []byte) []byte { return gztest.Damaged(gz)[k].Body }
		// An empty body (cut before its first byte, which net/http gives
		// as http.NoBody) fails for both, with errors that differ with
		// compression or without: the ListWatch does not see the
		// response's Content-Type (Request.Stream drops it) and takes an
		// empty body for JSON, and the REST client's decodes it as a
		// clientset does (Result.Into), client-go's NewListWatchFromClient
		// with Result.Get.
		emptied := len(d.Body) == 0
		t.Run(d.Name, func(t *testing.T) {
			for _, p := range all {
				_, wantErr := p.client(ctx, metav1.ListOptions{})
				_, err := p.ours.ListWithContext(ctx, metav1.ListOptions{})
				if fmt.Sprint(err) != fmt.Sprint(wantErr) && !(emptied && err != nil && wantErr != nil) {
					t.Errorf("%s: LIST error\n%v\nwant (the client's)\n%v", p.name, err, wantErr)
				}
			}
			p := all[0] // the watch decoder is the same for every client
			want := drain(t, p.watch(ctx, metav1.ListOptions{}))
			w, err := p.ours.WatchWithContext(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := drain(t, w); !reflect.DeepEqual(got, want) && !sniffedGarbage(got, want) {
				t.Errorf("%s: events\n%+v\nwant (the client's)\n%+v", p.name, got, want)
			}
		})
	}
}

// sniffedGarbage: a watch stream whose first byte is neither JSON nor
// whitespace is decoded as protobuf by watchdecode, which does not see the
// response's Content-Type (Request.Stream drops it), and as JSON by the
// client; both end with one ERROR event, whose messages differ. Damaged
// gzip data can inflate to such bytes.
func sniffedGarbage(got, want []watch.Event) bool {
	if len(got) != 1 || len(want) != 1 || got[0].Type != watch.Error || want[0].Type != watch.Error {
		return false
	}
	st, ok := want[0].Object.(*metav1.Status)
	return ok && strings.Contains(st.Message, "looking for beginning of value")
}
