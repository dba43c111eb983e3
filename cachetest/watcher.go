package cachetest

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
)

// watcher is one open watch. Writers hand it changes under the server's
// lock (push); its goroutine (run) owns the delivery: it sends the initial
// events, then queued events in order, then bookmarks, and closes the
// result channel when the watch ends. The goroutine is the only sender on
// result and the only one to close it.
type watcher struct {
	srv   *Server
	t     *resourceType
	pred  predicate
	start uint64
	spec  watchSpec
	ctx   context.Context

	result   chan watch.Event
	stopCh   chan struct{}
	stopOnce sync.Once
	killCh   chan struct{}
	killOnce sync.Once
	wake     chan struct{}

	// pending is owned by the goroutine once it runs.
	pending []watch.Event

	mu sync.Mutex
	// queue holds events not yet taken by the goroutine.
	queue []watch.Event
	// progress is the newest revision of a change to the watch's type:
	// once queue is delivered, every change up to it has been.
	progress uint64
	// hung watches deliver nothing more; dead ones are ending.
	hung, dead bool
	// lostAfter, for a hung watch that LoseWatches cut off, is when it
	// ends with the transport's error (zero: never).
	lostAfter time.Duration
}

var _ watch.Interface = &watcher{}

func newWatcher(ctx context.Context, s *Server, t *resourceType, p predicate, start uint64, spec watchSpec) *watcher {
	return &watcher{
		srv: s, t: t, pred: p, start: start, spec: spec, ctx: ctx,
		result: make(chan watch.Event),
		stopCh: make(chan struct{}),
		killCh: make(chan struct{}),
		wake:   make(chan struct{}, 1),
	}
}

// ResultChan returns the events; it is closed when the watch ends.
func (w *watcher) ResultChan() <-chan watch.Event { return w.result }

// Stop ends the watch; the result channel is closed soon after. Safe to
// call more than once and from any goroutine.
func (w *watcher) Stop() { w.stopOnce.Do(func() { close(w.stopCh) }) }

// kill ends the watch from the server's side (close, overflow).
func (w *watcher) kill() {
	w.mu.Lock()
	w.killLocked()
	w.mu.Unlock()
}

func (w *watcher) killLocked() {
	w.dead, w.queue = true, nil
	w.killOnce.Do(func() { close(w.killCh) })
}

// hang makes the watch silent for the rest of its life.
func (w *watcher) hang() {
	w.mu.Lock()
	w.hung, w.queue = true, nil
	w.mu.Unlock()
	w.signal()
}

// lose makes the watch silent and, after noticed, end with the error
// client-go reports for a connection its health check gave up on.
func (w *watcher) lose(noticed time.Duration) {
	w.mu.Lock()
	w.hung, w.queue, w.lostAfter = true, nil, max(noticed, time.Nanosecond)
	w.mu.Unlock()
	w.signal()
}

func (w *watcher) stopped() bool {
	select {
	case <-w.stopCh:
		return true
	default:
		return false
	}
}

func (w *watcher) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// push hands the watch a change; the server's lock is held. A consumer
// more than WatchBuffer events behind gets its watch closed.
func (w *watcher) push(c change) {
	if c.resource != w.t.id {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.progress = c.rv
	if w.hung || w.dead || w.stopped() {
		return
	}
	ev, ok := w.convert(c)
	if !ok {
		return
	}
	w.queue = append(w.queue, ev)
	if len(w.queue) > w.srv.opts.WatchBuffer {
		w.srv.stats.SlowWatchesClosed++
		w.killLocked()
		return
	}
	w.signal()
}

// convert turns a change into this watch's event, if it sees one. An
// update that moves an object out of the selectors is a DELETED event with
// the previous state stamped with the change's resourceVersion.
func (w *watcher) convert(c change) (watch.Event, bool) {
	if c.resource != w.t.id || c.rv <= w.start {
		return watch.Event{}, false
	}
	was := c.prev != nil && w.pred.matches(c.prev)
	if c.typ == watch.Deleted {
		return watch.Event{Type: watch.Deleted, Object: c.obj}, was
	}
	is := w.pred.matches(c.obj)
	switch {
	case is && was:
		return watch.Event{Type: watch.Modified, Object: c.obj}, true
	case is:
		return watch.Event{Type: watch.Added, Object: c.obj}, true
	case was:
		last := c.prev.DeepCopyObject()
		if m, err := metaOf(last); err == nil {
			m.SetResourceVersion(formatRV(c.rv))
		}
		return watch.Event{Type: watch.Deleted, Object: last}, true
	}
	return watch.Event{}, false
}

// take returns the queued events and the progress they bring the watch to.
func (w *watcher) take() ([]watch.Event, uint64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	evs := w.queue
	w.queue = nil
	return evs, w.progress, w.hung
}

func (w *watcher) isHung() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.hung
}

// run is the watch's goroutine.
func (w *watcher) run() {
	defer w.srv.wg.Done()
	defer close(w.result)
	defer w.srv.unregister(w)
	timeout := w.srv.clock.NewTimer(w.spec.timeout)
	defer timeout.Stop()
	var tick, last <-chan time.Time
	if w.spec.bookmarks && w.spec.timeout > lastBookmarkLead {
		l := w.srv.clock.NewTimer(w.spec.timeout - lastBookmarkLead)
		defer l.Stop()
		last = l.C()
	}
	if !w.sendAll(w.pending, timeout) {
		return
	}
	w.pending = nil
	if w.spec.bookmarks {
		t := w.srv.clock.NewTicker(w.srv.opts.BookmarkInterval)
		defer t.Stop()
		tick = t.C()
	}
	w.deliver(timeout, tick, last)
}

// lastBookmarkLead is how long before its timeout a watch that allows
// bookmarks gets one more, as kube-apiserver's watch cache sends it (and
// none when the timeout is shorter).
const lastBookmarkLead = 2 * time.Second

// deliver sends queued events as they come, and a bookmark at each tick
// and when last fires, until the watch ends.
func (w *watcher) deliver(timeout clock.Timer, tick, last <-chan time.Time) {
	bookmarkDue := false
	for {
		evs, progress, hung := w.take()
		if hung {
			w.waitEnd(timeout)
			return
		}
		if len(evs) > 0 {
			if !w.sendAll(evs, timeout) {
				return
			}
			continue
		}
		// Everything up to progress has been delivered: a bookmark may
		// carry it, once it is past where the watch started.
		if bookmarkDue && progress > w.start {
			if !w.send(watch.Event{Type: watch.Bookmark, Object: w.t.bookmark(progress, false)}, timeout) {
				return
			}
		}
		bookmarkDue = false
		select {
		case <-w.wake:
		case <-tick:
			bookmarkDue = true
		case <-last:
			bookmarkDue = true
		case <-timeout.C():
			return
		case <-w.stopCh:
			return
		case <-w.killCh:
			return
		case <-w.ctx.Done():
			return
		}
	}
}

// sendAll sends evs in order; false when the watch ended (or hung, in
// which case it has waited for the end).
func (w *watcher) sendAll(evs []watch.Event, timeout clock.Timer) bool {
	for _, ev := range evs {
		if w.isHung() {
			w.waitEnd(timeout)
			return false
		}
		if !w.send(ev, timeout) {
			return false
		}
	}
	return true
}

// send delivers a copy of ev; false if the watch ended first.
func (w *watcher) send(ev watch.Event, timeout clock.Timer) bool {
	ev.Object = ev.Object.DeepCopyObject()
	select {
	case w.result <- ev:
		if ev.Type == watch.Bookmark {
			w.srv.bookmarks.Add(1)
		} else {
			w.srv.events.Add(1)
		}
		return true
	case <-timeout.C():
	case <-w.stopCh:
	case <-w.killCh:
	case <-w.ctx.Done():
	}
	return false
}

// waitEnd waits, silent, for the watch to end; a watch LoseWatches cut
// off ends with the transport's error when that is noticed.
func (w *watcher) waitEnd(timeout clock.Timer) {
	w.mu.Lock()
	after := w.lostAfter
	w.mu.Unlock()
	var lost <-chan time.Time
	if after > 0 {
		t := w.srv.clock.NewTimer(after)
		defer t.Stop()
		lost = t.C()
	}
	select {
	case <-lost:
		w.send(watch.Event{Type: watch.Error, Object: connectionLost()}, timeout)
	case <-timeout.C():
	case <-w.stopCh:
	case <-w.killCh:
	case <-w.ctx.Done():
	}
}

// connectionLost is the status client-go's watch decoder sends when the
// HTTP/2 health check closed the connection under a watch.
func connectionLost() runtime.Object {
	err := errors.New("unable to decode an event from the watch stream: http2: client connection lost")
	return apierrors.NewClientErrorReporter(http.StatusInternalServerError, "GET", "ClientWatchDecoding").AsObject(err)
}

// unregister forgets a watch whose goroutine is ending.
func (s *Server) unregister(w *watcher) {
	s.mu.Lock()
	delete(s.watchers, w)
	s.mu.Unlock()
}
