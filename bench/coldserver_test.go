package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// The cold-start benchmark's API server (coldstart_test.go): enough of
// kube-apiserver for a Pod informer, answering from the files of
// coldfiles_test.go, in the benchmark's own process so that the measured
// process runs nothing but its client. GET /api/v1/pods answers:
//
//   - a LIST with a continue token: that page;
//   - a LIST at resourceVersion "0" in mode "whole": every Pod in one
//     response, whatever the limit, as the watch cache answers it;
//   - another LIST with limit 500: the first page (another limit is
//     counted as odd and answered the same);
//   - a LIST without a limit: every Pod in one response;
//   - a WATCH with sendInitialEvents=true (and, else counted as odd,
//     resourceVersionMatch=NotOlderThan and allowWatchBookmarks=true): the
//     WatchList stream, then nothing while the client keeps it open;
//   - another WATCH: nothing while the client keeps it open.
//
// The encoding follows the Accept header's first media type: protobuf
// for application/vnd.kubernetes.protobuf, else JSON. With gzip on
// (setGzip), LIST responses over 128 KiB and WatchList streams are
// compressed as kube-apiserver compresses them (coldgzip_test.go). GET /bench/stats
// returns what was served so far, as coldStats.

// coldStats counts what the server served.
type coldStats struct {
	Pages      int64 // LIST responses of one page
	Whole      int64 // LIST responses of every Pod
	WatchLists int64 // WatchList streams
	Watches    int64 // other watches
	Odd        int64 // requests not answered as asked, or not understood
	Protobuf   int64 // responses in protobuf (the others in JSON)
	Gzipped    int64 // responses compressed
	Bytes      int64 // response bodies' bytes, as sent (compressed or not)
}

// requests is the number of requests answered.
func (s coldStats) requests() int64 { return s.Pages + s.Whole + s.WatchLists + s.Watches }

// minus is s less t, field by field.
func (s coldStats) minus(t coldStats) coldStats {
	return coldStats{s.Pages - t.Pages, s.Whole - t.Whole, s.WatchLists - t.WatchLists,
		s.Watches - t.Watches, s.Odd - t.Odd, s.Protobuf - t.Protobuf, s.Gzipped - t.Gzipped, s.Bytes - t.Bytes}
}

// coldServer serves one collection of n Pods in both encodings.
type coldServer struct {
	dir string
	n   int
	// pages indexes each encoding's page file.
	pages map[string]*memPages
	url   string
	hs    *http.Server
	done  chan struct{}

	whole atomic.Bool // mode "whole": a LIST at RV "0" is answered whole
	gzip  atomic.Bool // compress as kube-apiserver does (coldgzip_test.go)
	// zipped are the compressed pieces of the file served last.
	zipped coldZipped

	mu    sync.Mutex
	stats coldStats
}

// startColdServer serves the files of n Pods under dir, in encodings,
// on a loopback port.
func startColdServer(dir string, n int, encodings []string) (*coldServer, error) {
	s := &coldServer{dir: dir, n: n, pages: map[string]*memPages{}, done: make(chan struct{})}
	for _, enc := range encodings {
		p, err := openMemPages(coldPath(dir, n, enc, coldPages))
		if err != nil {
			s.closePages()
			return nil, err
		}
		s.pages[enc] = p
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.closePages()
		return nil, err
	}
	s.url = "http://" + ln.Addr().String()
	s.hs = &http.Server{Handler: s}
	go func() {
		defer close(s.done)
		_ = s.hs.Serve(ln)
	}()
	return s, nil
}

// close stops the server, ending every connection.
func (s *coldServer) close() {
	_ = s.hs.Close()
	<-s.done
	s.closePages()
}

func (s *coldServer) closePages() {
	for _, p := range s.pages {
		p.close()
	}
}

// warm reads the file a cell of encoding and mode is served from, so
// that it is in the page cache before the cell's process starts: a file
// read from the disk while one implementation syncs and from memory
// while the next does would favour the second. With gzip on, it also
// compresses what the cell is served.
func (s *coldServer) warm(encoding, mode string) error {
	if s.gzip.Load() {
		if err := s.warmGzip(encoding, mode); err != nil {
			return err
		}
	}
	kind := map[string]string{"paged": coldPages, "whole": coldWhole, "watchlist": coldStream}[mode]
	f, err := os.Open(coldPath(s.dir, s.n, encoding, kind))
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Read(buf); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// setMode sets how a LIST at resourceVersion "0" is answered.
func (s *coldServer) setMode(mode string) { s.whole.Store(mode == "whole") }

// setGzip sets whether the server compresses as kube-apiserver does.
func (s *coldServer) setGzip(on bool) { s.gzip.Store(on) }

func (s *coldServer) snapshot() coldStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// count adds to the stats.
func (s *coldServer) count(f func(*coldStats)) {
	s.mu.Lock()
	f(&s.stats)
	s.mu.Unlock()
}

func (s *coldServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/bench/stats":
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.snapshot())
	case "/api/v1/pods":
		enc := "json"
		accept, _, _ := strings.Cut(r.Header.Get("Accept"), ",")
		if strings.HasPrefix(strings.TrimSpace(accept), "application/vnd.kubernetes.protobuf") {
			enc = "protobuf"
		}
		if s.pages[enc] == nil {
			s.refuse(w, http.StatusNotAcceptable, "no "+enc+" files")
			return
		}
		q := r.URL.Query()
		gz := s.gzip.Load() && acceptsGzip(r)
		if q.Get("watch") == "true" || q.Get("watch") == "1" {
			s.serveWatch(w, r, enc, gz)
			return
		}
		s.serveList(w, enc, gz, q.Get("limit"), q.Get("continue"), q.Get("resourceVersion"))
	default:
		s.refuse(w, http.StatusNotFound, "no such path")
	}
}

// refuse answers a request the server does not serve, counted as odd.
func (s *coldServer) refuse(w http.ResponseWriter, code int, why string) {
	s.count(func(st *coldStats) { st.Odd++ })
	http.Error(w, "coldstart: "+why, code)
}

func (s *coldServer) serveList(w http.ResponseWriter, enc string, gz bool, limit, cont, rv string) {
	page := 0
	switch {
	case cont != "":
		k, err := strconv.Atoi(strings.TrimPrefix(cont, "page-"))
		if err != nil || k <= 0 || k >= len(s.pages[enc].offs) {
			s.refuse(w, http.StatusBadRequest, "bad continue token "+cont)
			return
		}
		page = k
	case limit == "" || limit == "0" || (rv == "0" && s.whole.Load()):
		s.serveFile(w, enc, gz, coldPath(s.dir, s.n, enc, coldWhole), 0, -1, func(st *coldStats) { st.Whole++ })
		return
	case limit != strconv.Itoa(coldPageSize):
		s.count(func(st *coldStats) { st.Odd++ })
	}
	p := s.pages[enc]
	s.serveFile(w, enc, gz, coldPath(s.dir, s.n, enc, coldPages), p.offs[page], int64(p.lens[page]), func(st *coldStats) { st.Pages++ })
}

// serveFile sends n bytes of path from off (the whole file if n < 0) as
// a LIST response, compressed if gz and over the threshold, counted by
// what.
func (s *coldServer) serveFile(w http.ResponseWriter, enc string, gz bool, path string, off, n int64, what func(*coldStats)) {
	f, size, err := openSized(path)
	if err != nil {
		s.refuse(w, http.StatusInternalServerError, err.Error())
		return
	}
	defer f.Close()
	if n < 0 {
		n = size - off
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		s.refuse(w, http.StatusInternalServerError, err.Error())
		return
	}
	zipped, err := s.zippedBody(w, path, off, n, gz)
	if err != nil {
		s.refuse(w, http.StatusInternalServerError, err.Error())
		return
	}
	sent, body := n, io.LimitReader(f, n)
	if zipped != nil {
		sent, body = int64(len(zipped)), bytes.NewReader(zipped)
	}
	s.count(func(st *coldStats) {
		what(st)
		st.Bytes += sent
		st.Protobuf += isProto(enc)
		st.Gzipped += b2i(zipped != nil)
	})
	w.Header().Set("Content-Type", coldMediaType(enc))
	w.Header().Set("Content-Length", strconv.FormatInt(sent, 10))
	_, _ = io.Copy(w, body)
}

// serveWatch sends the WatchList stream if asked for one (compressed if
// gz), then holds the watch open, quiet, until the client leaves.
func (s *coldServer) serveWatch(w http.ResponseWriter, r *http.Request, enc string, gz bool) {
	q := r.URL.Query()
	stream := q.Get("sendInitialEvents") == "true"
	var f *os.File
	var size int64
	if stream {
		if q.Get("resourceVersionMatch") != "NotOlderThan" || q.Get("allowWatchBookmarks") != "true" {
			s.count(func(st *coldStats) { st.Odd++ })
		}
		var err error
		if f, size, err = openSized(coldPath(s.dir, s.n, enc, coldStream)); err != nil {
			s.refuse(w, http.StatusInternalServerError, err.Error())
			return
		}
		defer f.Close()
	}
	zipped, err := s.zippedBody(w, coldPath(s.dir, s.n, enc, coldStream), 0, size, gz && stream)
	if err != nil {
		s.refuse(w, http.StatusInternalServerError, err.Error())
		return
	}
	s.count(func(st *coldStats) {
		if stream {
			st.WatchLists++
		} else {
			st.Watches++
		}
		st.Bytes += size
		if zipped != nil {
			st.Bytes += int64(len(zipped)) - size
		}
		st.Protobuf += isProto(enc)
		st.Gzipped += b2i(zipped != nil)
	})
	ct := "application/json"
	if enc == "protobuf" {
		ct = coldMediaType(enc) + ";stream=watch"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(http.StatusOK)
	switch {
	case zipped != nil:
		_, _ = w.Write(zipped)
	case f != nil:
		_, _ = io.Copy(w, f)
	}
	http.NewResponseController(w).Flush()
	<-r.Context().Done()
}

// openSized opens path and returns its size.
func openSized(path string) (*os.File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, fi.Size(), nil
}

func coldMediaType(enc string) string {
	if enc == "protobuf" {
		return "application/vnd.kubernetes.protobuf"
	}
	return "application/json"
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func isProto(enc string) int64 {
	if enc == "protobuf" {
		return 1
	}
	return 0
}

// fetchColdStats asks the server at url for its stats.
func fetchColdStats(url string) (coldStats, error) {
	var st coldStats
	resp, err := http.Get(url + "/bench/stats")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("coldstart: stats: %s", resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}
