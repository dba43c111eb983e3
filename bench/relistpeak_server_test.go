package bench

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// pageServer serves a Pod collection's LISTs and WATCHes over HTTP from
// the memory benchmark's protobuf page files, as kube-apiserver would at
// one version of the collection at a time: a LIST page is streamed from
// its file (the server holds no page in its heap); a watch from the
// current version's resourceVersion stays open and silent until the
// collection moves on (expire), which ends it; a watch from an older
// resourceVersion is answered 410 Expired, so the informer relists. It
// refuses WatchList requests, as a server without the feature does, so
// every informer LISTs; unless watchList is set: then it streams them
// (relistpeak_watchlist_test.go).
type pageServer struct {
	n         int
	pages     [memVersions]*memPages
	watchList *watchListBufs

	mu sync.Mutex
	v  int
	// cut is closed when the collection moves on from v.
	cut chan struct{}
	// watching receives the version of every watch left open.
	watching chan int
}

// openPageServer serves n Pods from the page files under dir, at the
// initial version; WatchLists too if watchList.
func openPageServer(dir string, n int, watchList bool) (*pageServer, error) {
	s := &pageServer{n: n, cut: make(chan struct{}), watching: make(chan int, 64)}
	for v := range memVersions {
		p, err := openMemPages(memPagesPath(dir, n, v, "protobuf"))
		if err != nil {
			s.close()
			return nil, err
		}
		s.pages[v] = p
	}
	if watchList {
		s.watchList = newWatchListBufs(s.pages)
	}
	return s, nil
}

func (s *pageServer) close() {
	for _, p := range s.pages {
		if p != nil {
			p.close()
		}
	}
}

// expire moves the collection to version v: the watches open end, and
// any from an earlier version is answered 410 Expired.
func (s *pageServer) expire(v int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.v = v
	close(s.cut)
	s.cut = make(chan struct{})
}

// waitWatching waits, for up to 10 minutes, until a watch of version v
// is open.
func (s *pageServer) waitWatching(v int) error {
	timeout := time.After(10 * time.Minute)
	for {
		select {
		case got := <-s.watching:
			if got == v {
				return nil
			}
		case <-timeout:
			return fmt.Errorf("relistpeak: no watch of version %d in 10 minutes", v)
		}
	}
}

func (s *pageServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	v, cut := s.v, s.cut
	s.mu.Unlock()
	if r.URL.Query().Get("watch") == "true" {
		s.serveWatch(w, r, v, cut)
		return
	}
	page := 0
	if c := r.URL.Query().Get("continue"); c != "" {
		page, _ = strconv.Atoi(strings.TrimPrefix(c, "page-"))
	}
	p := s.pages[v]
	if page < 0 || page >= len(p.offs) {
		http.Error(w, "no such page", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
	w.Header().Set("Content-Length", strconv.Itoa(p.lens[page]))
	_, _ = io.Copy(w, io.NewSectionReader(p.f, p.offs[page], int64(p.lens[page])))
}

func (s *pageServer) serveWatch(w http.ResponseWriter, r *http.Request, v int, cut chan struct{}) {
	q := r.URL.Query()
	if q.Get("sendInitialEvents") == "true" {
		s.serveWatchList(w, r, v, cut)
		return
	}
	if rv, _ := strconv.Atoi(q.Get("resourceVersion")); rv < memListRV(v, s.n) {
		writeStatus(w, apierrors.NewResourceExpired("too old resource version"))
		return
	}
	w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf;stream=watch")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	s.watching <- v
	select {
	case <-r.Context().Done():
	case <-cut:
	}
}

// serveWatchList streams version v's WatchList, then stays open as a
// watch until the collection moves on; refused without watchList.
func (s *pageServer) serveWatchList(w http.ResponseWriter, r *http.Request, v int, cut chan struct{}) {
	if s.watchList == nil {
		writeStatus(w, apierrors.NewBadRequest("sendInitialEvents is not supported"))
		return
	}
	w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf;stream=watch")
	w.WriteHeader(http.StatusOK)
	if s.watchList.streamInitial(w, s.pages[v], memListRV(v, s.n)) != nil {
		return
	}
	w.(http.Flusher).Flush()
	s.watching <- v
	select {
	case <-r.Context().Done():
	case <-cut:
	}
}
