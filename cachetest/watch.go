package cachetest

import (
	"context"
	"errors"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// Watch is WatchWithContext without a context.
func (r *Resource) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return r.WatchWithContext(context.Background(), opts)
}

// WatchWithContext opens a watch as kube-apiserver's watch cache does:
//
//   - resourceVersion "" or "0" (without sendInitialEvents): the state
//     (newest, or the cache's for "0") as synthetic ADDED events in key
//     order, then every change after it.
//   - a number N: every change after N, replayed from the history; 410
//     Expired as an ERROR event if N was compacted. A number beyond the
//     newest waits for it silently, as the real server does.
//   - sendInitialEvents=true with resourceVersionMatch=NotOlderThan (a
//     WatchList): the state at least as fresh as the resourceVersion
//     ("": newest, "0": the cache's), as ADDED events, then, when bookmarks
//     are allowed, a BOOKMARK annotated k8s.io/initial-events-end carrying
//     its resourceVersion, then the changes after it. A number beyond the
//     newest waits three seconds, then ends with a 504 "Too large
//     resource version" ERROR event. sendInitialEvents=false starts at the
//     resourceVersion without the state.
//
// With Options.DisableWatchList, sendInitialEvents is refused with 422
// Invalid, as a server without the WatchList feature refuses it. Label,
// field and shard selectors (see ListWithContext) filter the events,
// initial ones included, but not bookmarks; an update moving an object
// into or out of them arrives as ADDED or DELETED. A malformed shard
// selector is 400 BadRequest. With allowWatchBookmarks, a BOOKMARK
// carrying the resourceVersion of the type's newest change comes every
// Options.BookmarkInterval, and 2 s before the watch's timeout if that is
// longer than 2 s, once that change is past the resourceVersion
// the watch started at: as in kube-apiserver, a watch on a type nobody
// writes gets no bookmark (but the initial-events-end one), and changes to
// other types do not count.
// The watch ends cleanly after TimeoutSeconds (or MinRequestTimeout) on the
// clock, when ctx ends, when Stop is called, and when the server closes it.
func (r *Resource) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	c := r.call(VerbWatch, "", "")
	if err := r.srv.begin(ctx, c); err != nil {
		return nil, err
	}
	in, p, err := r.parseOptions(opts, true)
	if err != nil {
		return nil, err
	}
	spec, err := r.newWatchSpec(in)
	if err != nil {
		return nil, err
	}
	if spec.watchList && spec.n > 0 {
		if err := r.srv.waitFresh(ctx, c, spec.n); err != nil {
			var status apierrors.APIStatus
			if errors.As(err, &status) {
				return errorWatch(status), nil
			}
			return nil, err
		}
	}
	s := r.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errConnectionRefused(c)
	}
	return r.openLocked(ctx, spec, p), nil
}

// watchSpec is a validated watch request.
type watchSpec struct {
	rv string
	n  uint64
	// initial: send the state first, as ADDED events.
	initial bool
	// watchList: sendInitialEvents=true was asked for.
	watchList bool
	// endBookmark: close the initial events with the annotated bookmark.
	endBookmark bool
	bookmarks   bool
	timeout     time.Duration
}

func (r *Resource) newWatchSpec(in internalversion.ListOptions) (watchSpec, error) {
	spec := watchSpec{rv: in.ResourceVersion, bookmarks: in.AllowWatchBookmarks && r.srv.opts.BookmarkInterval > 0}
	if spec.rv != "" && spec.rv != "0" {
		n, err := strconv.ParseUint(spec.rv, 10, 64)
		if err != nil {
			return spec, errInvalidRV(r.t.gr, spec.rv, err)
		}
		spec.n = n
	}
	spec.initial = spec.rv == "" || spec.rv == "0"
	if in.SendInitialEvents != nil {
		spec.initial = *in.SendInitialEvents
		spec.watchList = *in.SendInitialEvents
		spec.endBookmark = spec.watchList && in.AllowWatchBookmarks
	}
	spec.timeout = r.srv.opts.MinRequestTimeout
	if in.TimeoutSeconds != nil && *in.TimeoutSeconds > 0 {
		spec.timeout = time.Duration(*in.TimeoutSeconds) * time.Second
	}
	return spec, nil
}

// progressLocked is the newest resourceVersion the watch cache of r's type
// knows when a watch from start opens: the type's newest change past start,
// or start. Changes to other types do not move it, as each type has its own
// cache in kube-apiserver. (etcd's progress notifications, which move a
// quiet type's cache about every 10 minutes there, are not modelled.)
func (r *Resource) progressLocked(start uint64) uint64 {
	p := start
	for _, c := range r.srv.hist.since(start) {
		if c.resource == r.t.id {
			p = c.rv
		}
	}
	return p
}

// openLocked registers a watch for spec and starts its goroutine; the
// events it must begin with are computed here, under the server's lock, so
// that none is missed or repeated.
func (r *Resource) openLocked(ctx context.Context, spec watchSpec, p predicate) watch.Interface {
	s := r.srv
	h := s.hist
	var start uint64
	switch {
	case spec.rv == "":
		start = h.rev
	case spec.rv == "0":
		start = s.cacheRev()
	case spec.watchList:
		start = max(spec.n, s.cacheRev())
	default:
		start = spec.n
		if start < h.compacted {
			s.stats.Expired++
			return errorWatch(errWatchTooOld(start, h.compacted))
		}
	}
	if spec.watchList {
		s.stats.WatchLists++
	}
	w := newWatcher(ctx, s, r.t, p, start, spec)
	switch f, ok := s.faults.takeWatch(); {
	case !ok:
		w.pending = r.initialEventsLocked(w, spec, start)
	case f.kind == FaultDropWatch, f.kind == FaultEmptyWatch:
		// Silent from the start; an empty one also ends early.
		s.stats.Faults[f.kind]++
		w.hung = true
		if f.kind == FaultEmptyWatch {
			w.spec.timeout = min(w.spec.timeout, f.closeAfter)
		}
	default:
		s.stats.Faults[f.kind]++
		return r.errorWatchLocked(f)
	}
	w.progress = r.progressLocked(start)
	s.watchers[w] = struct{}{}
	s.wg.Add(1)
	go w.run()
	return w
}

// initialEventsLocked is what a new watch starts with: the state at start
// (if asked), the initial-events-end bookmark (if asked) and the changes
// after start.
func (r *Resource) initialEventsLocked(w *watcher, spec watchSpec, start uint64) []watch.Event {
	h := r.srv.hist
	var out []watch.Event
	if spec.initial {
		for _, kv := range h.snapshot(r.t.id, start) {
			if w.pred.matches(kv.obj) {
				out = append(out, watch.Event{Type: watch.Added, Object: kv.obj})
			}
		}
	}
	if spec.endBookmark {
		out = append(out, watch.Event{Type: watch.Bookmark, Object: r.t.bookmark(start, true)})
	}
	for _, c := range h.since(start) {
		if ev, ok := w.convert(c); ok {
			out = append(out, ev)
		}
	}
	return out
}

// errorWatchLocked is the watch a request gets instead of a working one
// when f, queued by FailNextWatchStreams, is its fault: one ERROR event
// with f's status.
func (r *Resource) errorWatchLocked(f Fault) watch.Interface {
	c := r.call(VerbWatch, "", "")
	r.srv.noteRetryAfterLocked(c, f)
	status, _ := f.status(c)
	return errorWatch(status)
}

// errorWatch is a watch that delivers one ERROR event with err's status
// and closes, as kube-apiserver answers a watch it accepted but cannot
// serve. It has no goroutine.
func errorWatch(err apierrors.APIStatus) watch.Interface {
	ch := make(chan watch.Event, 1)
	status := err.Status()
	ch <- watch.Event{Type: watch.Error, Object: &status}
	close(ch)
	return watch.NewProxyWatcher(ch)
}
