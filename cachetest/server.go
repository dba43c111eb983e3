// Package cachetest is a faithful in-memory Kubernetes API server for
// testing code built on Reflectors and informers, in the manner of
// net/http/httptest: NewServer starts one, Close stops it and waits for
// everything it started.
//
// Unlike client-go's fake clientset and FakeControllerSource, it keeps the
// API server's contract: one resourceVersion counter and one change
// history for every resource (like etcd), LIST pagination with opaque
// continue tokens, label, field and shard selectors, compaction with 410
// Expired answers, "too large resource version" answers, watch bookmarks,
// WatchList streams ending with the initial-events-end bookmark, watch
// timeouts, and faults injected by plain, deterministic method calls. All time comes
// from an injected clock, so tests can run under testing/synctest or with
// a fake clock.
//
// The verbs (List, Watch, Get, Create, Update, Delete) take a context and
// API options and return objects, watch.Interface values and errors shaped
// as kube-apiserver's (apierrors.StatusError, with Retry-After in
// Details.RetryAfterSeconds), independent of any transport. A Resource
// implements the Reflector's ListerWatcher and ListerWatcherWithContext.
// Start serves the same core over HTTP on loopback, as the Kubernetes REST
// API, for real clients built from RESTConfig (client-go's clientsets and
// informers); faults and counters apply there exactly as in process.
//
// See docs/cachetest.md in the module for the exact semantics of each
// resourceVersion form and how they follow kube-apiserver's.
package cachetest

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
)

// freshnessWait is how long kube-apiserver's watch cache waits to reach a
// resourceVersion newer than it has before answering "too large".
const freshnessWait = 3 * time.Second

// Options configures a Server. The zero value gives kube-apiserver's
// defaults where it has one.
type Options struct {
	// Clock drives bookmarks, watch timeouts, delays and waits; defaults to
	// the real clock (which testing/synctest fakes).
	Clock clock.WithTicker
	// BookmarkInterval is how often a watch that allows bookmarks gets one
	// (carrying the newest resourceVersion). Zero means one minute, as
	// kube-apiserver; negative sends none (but the initial-events-end one).
	BookmarkInterval time.Duration
	// HistoryLimit, if positive, is how many changes the history keeps:
	// older ones are compacted away automatically, so that watches from
	// before them get 410 Expired. Zero keeps everything until Compact.
	HistoryLimit int
	// DisableCompression makes the HTTP server (Start) answer as
	// kube-apiserver with APIResponseCompression and WatchListCompression
	// off: nothing compressed. By default it compresses as kube-apiserver
	// does, with gzip at level 1 (Content-Encoding: gzip, Vary:
	// Accept-Encoding), for requests whose Accept-Encoding names gzip
	// (as net/http's transport sends, unless DisableCompression is set in
	// the client's rest.Config or transport): LIST bodies over 128 KiB,
	// and WatchList streams (sendInitialEvents=true) whole, each event
	// flushed as it is written. Other watches are never compressed.
	DisableCompression bool
	// DisableWatchList makes the server answer WatchList requests
	// (sendInitialEvents) as a server without the feature does: 422
	// Invalid. Clients then fall back to LIST.
	DisableWatchList bool
	// DisableShardedListAndWatch makes the server act as kube-apiserver
	// with the ShardedListAndWatch feature gate off (its default in 1.37)
	// or before 1.36: it ignores ListOptions.ShardSelector, well-formed or
	// not, so LIST and WATCH serve every object and no ListMeta.ShardInfo.
	// Server.SetShardedListAndWatch changes it on a running server.
	DisableShardedListAndWatch bool
	// NoWatchCache mimics kube-apiserver with --watch-cache=false: LISTs at
	// resourceVersion "0" are paged and fresh, as reads from etcd are. By
	// default they are served as from the watch cache: in one page
	// whatever the limit, and CacheLag revisions behind.
	NoWatchCache bool
	// CacheLag is how many revisions the watch cache trails the newest
	// state by: reads that accept any state (resourceVersion "0") see the
	// state that many changes ago. Ignored with NoWatchCache.
	CacheLag int
	// WatchBuffer is how many events a watch may have queued for a consumer
	// that does not keep up before the server closes it (as kube-apiserver
	// closes unresponsive watchers). Zero means 100.
	WatchBuffer int
	// MinRequestTimeout is how long a watch lasts when the request sets no
	// TimeoutSeconds. Zero means 30 minutes (kube-apiserver's default; the
	// real server adds up to as much again at random, this one does not).
	MinRequestTimeout time.Duration
}

// Server is an in-memory API server. Create it with NewServer, add
// resources with Resource, and stop it with Close. All methods are safe for
// concurrent use.
type Server struct {
	clock clock.WithTicker
	opts  Options

	mu       sync.Mutex
	hist     *history
	types    map[string]*resourceType
	watchers map[*watcher]struct{}
	// changed is closed and replaced at every change.
	changed chan struct{}
	faults  faultState
	stats   Stats
	closed  bool
	// web is the HTTP side, once Start has run.
	web *httpServer

	// events and bookmarks are counted by watch goroutines.
	events, bookmarks atomic.Int64
	// shardingOff is the ShardedListAndWatch feature gate, off.
	shardingOff atomic.Bool

	// done is closed by Close; wg counts watch goroutines.
	done chan struct{}
	wg   sync.WaitGroup
}

// NewServer returns a running Server with no resources and resourceVersion
// 0. Call Close when done with it.
func NewServer(opts Options) *Server {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.BookmarkInterval == 0 {
		opts.BookmarkInterval = time.Minute
	}
	if opts.WatchBuffer <= 0 {
		opts.WatchBuffer = 100
	}
	if opts.MinRequestTimeout <= 0 {
		opts.MinRequestTimeout = 30 * time.Minute
	}
	if opts.NoWatchCache {
		opts.CacheLag = 0
	}
	s := &Server{
		clock:    opts.Clock,
		opts:     opts,
		hist:     newHistory(opts.HistoryLimit),
		types:    map[string]*resourceType{},
		watchers: map[*watcher]struct{}{},
		changed:  make(chan struct{}),
		faults:   newFaultState(),
		stats:    newStats(),
		done:     make(chan struct{}),
	}
	s.shardingOff.Store(opts.DisableShardedListAndWatch)
	return s
}

// Resource returns the handle of the resource t describes, adding it on
// the first call. It panics if t is malformed or names a resource already
// added with another type.
func (s *Server) Resource(t Type) *Resource {
	rt := newResourceType(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.types[rt.id]; ok {
		if !old.sameAs(rt) {
			panic(fmt.Sprintf("cachetest: resource %s was already added with another type", rt.id))
		}
		rt = old
	}
	s.types[rt.id] = rt
	return &Resource{srv: s, t: rt}
}

// ResourceVersion returns the newest resourceVersion ("0" before the first
// change).
func (s *Server) ResourceVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return formatRV(s.hist.rev)
}

// Compact forgets the history up to rv, as etcd compaction does: watches
// from an older resourceVersion, LISTs at one and continue tokens from one
// then get 410 Expired. It fails if rv is not a resourceVersion the server
// has reached; compacting to an older point than before does nothing.
func (s *Server) Compact(rv string) error {
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return fmt.Errorf("cachetest: Compact(%q): %w", rv, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n > s.hist.rev {
		return fmt.Errorf("cachetest: Compact(%q): the newest resourceVersion is %d", rv, s.hist.rev)
	}
	s.hist.compact(n)
	return nil
}

// Close closes every open watch, makes every later call fail as a refused
// connection, and, if the server was started, stops serving HTTP: it
// closes the listener and every connection (ending streaming responses)
// and the idle connections of the client transport. It returns once every
// goroutine the server started (watches, request handlers, the accept
// loop) has ended. It is safe to call more than once.
func (s *Server) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.done)
		for w := range s.watchers {
			w.kill()
		}
	}
	web := s.web
	s.mu.Unlock()
	if web != nil {
		web.close()
	}
	s.wg.Wait()
}

// lookupType returns the type added for gr, or nil.
func (s *Server) lookupType(gr schema.GroupResource) *resourceType {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.types[gr.String()]
}

// servedTypes returns the types added so far, in no particular order.
func (s *Server) servedTypes() []*resourceType {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*resourceType, 0, len(s.types))
	for _, t := range s.types {
		out = append(out, t)
	}
	return out
}

// isClosed says whether Close has been called.
func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// cacheRev is the revision reads at resourceVersion "0" are served at.
func (s *Server) cacheRev() uint64 {
	h := s.hist
	if uint64(s.opts.CacheLag) >= h.rev {
		return h.compacted
	}
	return max(h.compacted, h.rev-uint64(s.opts.CacheLag))
}

// waitFresh waits, up to freshnessWait on the server's clock, for the
// server to reach revision rv; then it answers "too large".
func (s *Server) waitFresh(ctx context.Context, c call, rv uint64) error {
	t := s.clock.NewTimer(freshnessWait)
	defer t.Stop()
	for {
		s.mu.Lock()
		cur, changed := s.hist.rev, s.changed
		if cur >= rv {
			s.mu.Unlock()
			return nil
		}
		s.mu.Unlock()
		select {
		case <-changed:
		case <-t.C():
			s.mu.Lock()
			s.stats.TooLarge++
			s.mu.Unlock()
			return errTooLarge(rv, cur)
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return errConnectionRefused(c)
		}
	}
}

func formatRV(rv uint64) string { return strconv.FormatUint(rv, 10) }
