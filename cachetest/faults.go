package cachetest

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Verb names a kind of request.
type Verb string

// The verbs a Server serves.
const (
	VerbGet    Verb = "get"
	VerbList   Verb = "list"
	VerbWatch  Verb = "watch"
	VerbCreate Verb = "create"
	VerbUpdate Verb = "update"
	VerbDelete Verb = "delete"
	// VerbDeleteCollection is DeleteCollection.
	VerbDeleteCollection Verb = "deletecollection"
)

// FaultKind names a kind of injected fault, as counted in Stats.Faults.
type FaultKind string

// Kinds of faults.
const (
	FaultTooManyRequests   FaultKind = "TooManyRequests"
	FaultInternalError     FaultKind = "InternalError"
	FaultForbidden         FaultKind = "Forbidden"
	FaultConnectionRefused FaultKind = "ConnectionRefused"
	FaultTimeout           FaultKind = "Timeout"
	FaultError             FaultKind = "Error"
	FaultCloseWatch        FaultKind = "CloseWatch"
	FaultHangWatch         FaultKind = "HangWatch"
	// FaultLoseWatch counts watches LoseWatches cut off.
	FaultLoseWatch FaultKind = "LoseWatch"
	FaultDropWatch FaultKind = "DropWatch"
	// FaultEmptyWatch counts watches CloseNextWatches closed empty.
	FaultEmptyWatch FaultKind = "EmptyWatch"
	FaultDelay      FaultKind = "Delay"
)

// Fault is how a failed call is answered; build one with TooManyRequests,
// InternalError, Forbidden, ConnectionRefused, Timeout or Error.
type Fault struct {
	kind       FaultKind
	retryAfter time.Duration
	// closeAfter is how long an empty watch (FaultEmptyWatch) stays open.
	closeAfter time.Duration
	err        error
}

// TooManyRequests answers 429 TooManyRequests; a positive retryAfter is
// sent as Retry-After (Details.RetryAfterSeconds, rounded up to seconds),
// and a client retrying sooner is counted in Stats.EarlyRetries.
func TooManyRequests(retryAfter time.Duration) Fault {
	return Fault{kind: FaultTooManyRequests, retryAfter: retryAfter}
}

// InternalError answers 500 InternalError.
func InternalError() Fault { return Fault{kind: FaultInternalError} }

// Forbidden answers 403 Forbidden, worded as an RBAC denial.
func Forbidden() Fault { return Fault{kind: FaultForbidden} }

// ConnectionRefused fails as a client does when nothing listens: a
// *url.Error around a *net.OpError with ECONNREFUSED, which
// utilnet.IsConnectionRefused recognises.
func ConnectionRefused() Fault { return Fault{kind: FaultConnectionRefused} }

// Timeout answers 504 Timeout, as kube-apiserver's request timeout does.
func Timeout() Fault { return Fault{kind: FaultTimeout} }

// Error answers with err as it is. It panics if err is nil.
func Error(err error) Fault {
	if err == nil {
		panic("cachetest: Error(nil)")
	}
	return Fault{kind: FaultError, err: err}
}

// Kind returns the fault's kind.
func (f Fault) Kind() FaultKind { return f.kind }

func (f Fault) errorFor(c call) error {
	switch f.kind {
	case FaultTooManyRequests:
		return errThrottled(retryAfterSeconds(f.retryAfter))
	case FaultInternalError:
		return errInternal()
	case FaultForbidden:
		return errForbidden(c)
	case FaultConnectionRefused:
		return errConnectionRefused(c)
	case FaultTimeout:
		return errTimeout()
	}
	return f.err
}

func retryAfterSeconds(d time.Duration) int {
	return int((d + time.Second - 1) / time.Second)
}

// call describes one request, for faults and error messages.
type call struct {
	verb      Verb
	gr        schema.GroupResource
	namespace string
	name      string
}

// path is the request's URL path, for error messages.
func (c call) path() string {
	p := "/api/v1"
	if c.gr.Group != "" {
		p = "/apis/" + c.gr.Group + "/v1"
	}
	if c.namespace != "" {
		p += "/namespaces/" + c.namespace
	}
	p += "/" + c.gr.Resource
	if c.name != "" {
		p += "/" + c.name
	}
	return p
}

type retryKey struct {
	verb Verb
	gr   schema.GroupResource
}

type pendingFault struct {
	fault Fault
	left  int
}

// faultState is the injected faults; the Server's mutex guards it.
type faultState struct {
	next  map[Verb][]pendingFault
	delay map[Verb]time.Duration
	// watchNext is what the next watch requests that would succeed get
	// instead of a working watch, in the order queued: a dropped watch
	// (FaultDropWatch), one closed empty (FaultEmptyWatch), or one ended
	// by an ERROR event with the status of a failure's Fault.
	watchNext []pendingFault
	retryAt   map[retryKey]time.Time
}

func newFaultState() faultState {
	return faultState{next: map[Verb][]pendingFault{}, delay: map[Verb]time.Duration{}, retryAt: map[retryKey]time.Time{}}
}

// take consumes the next failure queued for verb.
func (f *faultState) take(verb Verb) (Fault, bool) {
	fault, q, ok := pop(f.next[verb])
	if ok {
		f.next[verb] = q
	}
	return fault, ok
}

// takeWatch consumes the next fault queued for a watch that would succeed.
func (f *faultState) takeWatch() (Fault, bool) {
	fault, q, ok := pop(f.watchNext)
	f.watchNext = q
	return fault, ok
}

// pop uses up one of q's first fault and returns it with what is left.
func pop(q []pendingFault) (Fault, []pendingFault, bool) {
	if len(q) == 0 {
		return Fault{}, q, false
	}
	fault := q[0].fault
	if q[0].left--; q[0].left == 0 {
		q = q[1:]
	}
	return fault, q, true
}

// FailNext makes the next n calls of verb (on any resource) fail with f.
// Failures queued for the same verb are used up in the order queued. It
// panics if f is the zero Fault.
func (s *Server) FailNext(verb Verb, n int, f Fault) {
	if f.kind == "" {
		panic("cachetest: FailNext with the zero Fault")
	}
	if n <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.next[verb] = append(s.faults.next[verb], pendingFault{fault: f, left: n})
}

// Delay makes every call of verb wait d on the server's clock before it is
// served (until ClearFaults or Delay(verb, 0)). A caller whose context ends
// while waiting gets the context's error.
func (s *Server) Delay(verb Verb, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d <= 0 {
		delete(s.faults.delay, verb)
		return
	}
	s.faults.delay[verb] = d
}

// CloseWatches closes every open watch, as a restarting server does: each
// consumer sees its result channel closed, without an error event. It
// returns how many watches it closed.
func (s *Server) CloseWatches() int { return s.eachWatch(FaultCloseWatch, (*watcher).kill) }

// HangWatches makes every open watch go silent, as behind a stuck proxy:
// it delivers nothing more (events for it are lost) and stays open until
// its consumer stops it, its context ends, its timeout passes or the server
// closes. ClearFaults does not revive it. It returns how many watches hang.
func (s *Server) HangWatches() int { return s.eachWatch(FaultHangWatch, (*watcher).hang) }

// LoseWatches cuts every open watch off as a black-holed connection does:
// from now on it delivers nothing (events for it are lost), and after
// noticed it ends with the ERROR event client-go's watch decoder delivers
// when the HTTP/2 health check gives up on the connection (a 500 whose
// message says "http2: client connection lost"), then closes. At
// client-go's defaults the health check notices 30 s + 15 s after the
// last frame received. A watch that ends sooner (stopped, timed out, the
// server closed) ends as it would have. Over HTTP the event is written to
// the stream like any other, which a real black-hole could not do: to
// test a client's transport, put a proxy in between. It returns how many
// watches it cut off.
func (s *Server) LoseWatches(noticed time.Duration) int {
	return s.eachWatch(FaultLoseWatch, func(w *watcher) { w.lose(noticed) })
}

// eachWatch applies fault to every open watch, counts them as faults of
// kind, and returns how many there were.
func (s *Server) eachWatch(kind FaultKind, fault func(*watcher)) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watchers {
		fault(w)
	}
	s.stats.Faults[kind] += len(s.watchers)
	return len(s.watchers)
}

// DropNextWatches makes the next n watch requests that would succeed be
// lost in transit: the call succeeds but the watch is silent from the
// start, exactly like a hung one.
//
// DropNextWatches, CloseNextWatches and FailNextWatchStreams share one
// queue: what they ask for is used up in the order queued, one watch
// request that would succeed (WatchLists included) at a time. A request
// the server refuses (a FailNext failure, a compacted resourceVersion's
// 410) uses none up.
func (s *Server) DropNextWatches(n int) { s.queueWatchFault(n, Fault{kind: FaultDropWatch}) }

// CloseNextWatches makes the next n watch requests that would succeed get
// a watch that closes cleanly after (at once if after is not positive, at
// the watch's own timeout if that is sooner) without a single event: no
// bookmark, and changes meanwhile are not delivered. This is what a client
// behind a load balancer sees when the server behind it has gone: the
// request succeeds (over HTTP, a 200 whose stream stays empty) and the
// watch ends having delivered nothing, at once, or after the few seconds
// the client's own retries took. Each is counted in Stats.Faults as
// FaultEmptyWatch when it is used up. See DropNextWatches for the queue it
// shares.
func (s *Server) CloseNextWatches(n int, after time.Duration) {
	s.queueWatchFault(n, Fault{kind: FaultEmptyWatch, closeAfter: max(after, 0)})
}

// FailNextWatchStreams makes the next n watch requests that would succeed
// get a watch that is accepted and then ends, before any other event, with
// one ERROR event carrying f's status, as kube-apiserver ends a watch it
// can no longer serve (InternalError: a 500 from its storage layer; over
// HTTP, a 200 whose stream holds that one ERROR event). Each is counted
// in Stats.Faults under f's kind when it is used up. It panics if f has no
// status to send (the zero Fault, ConnectionRefused, or Error with an
// error that is not an apierrors.APIStatus). See DropNextWatches for the
// queue it shares.
func (s *Server) FailNextWatchStreams(n int, f Fault) {
	if _, ok := f.status(call{verb: VerbWatch}); !ok {
		panic(fmt.Sprintf("cachetest: FailNextWatchStreams with a fault that has no status: %q", f.kind))
	}
	s.queueWatchFault(n, f)
}

func (s *Server) queueWatchFault(n int, f Fault) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.watchNext = append(s.faults.watchNext, pendingFault{fault: f, left: n})
}

// status is the API status f answers c with, if f has one.
func (f Fault) status(c call) (apierrors.APIStatus, bool) {
	var st apierrors.APIStatus
	err := f.errorFor(c)
	return st, err != nil && errors.As(err, &st)
}

// ClearFaults cancels queued failures, delays, drops, empty closes and
// failing streams. Watches already hung or dropped stay so.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.next = map[Verb][]pendingFault{}
	s.faults.delay = map[Verb]time.Duration{}
	s.faults.watchNext = nil
}

// begin admits a call: it counts it, waits any delay, and returns the
// injected failure, if any. A closed server refuses the connection.
func (s *Server) begin(ctx context.Context, c call) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errConnectionRefused(c)
	}
	s.stats.Calls[c.verb]++
	now := s.clock.Now()
	if at, ok := s.faults.retryAt[retryKey{c.verb, c.gr}]; ok && now.Before(at) {
		s.stats.EarlyRetries++
	}
	d := s.faults.delay[c.verb]
	if d > 0 {
		s.stats.Faults[FaultDelay]++
	}
	s.mu.Unlock()
	if d > 0 {
		if err := s.sleep(ctx, c, d); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.faults.take(c.verb)
	if !ok {
		return nil
	}
	s.stats.Faults[f.kind]++
	s.noteRetryAfterLocked(c, f)
	return f.errorFor(c)
}

// noteRetryAfterLocked remembers when a client answered with f may call
// again, so that a call before then counts in Stats.EarlyRetries.
func (s *Server) noteRetryAfterLocked(c call, f Fault) {
	if f.kind == FaultTooManyRequests && f.retryAfter > 0 {
		s.faults.retryAt[retryKey{c.verb, c.gr}] = s.clock.Now().Add(time.Duration(retryAfterSeconds(f.retryAfter)) * time.Second)
	}
}

// sleep waits d on the server's clock, or until ctx ends or Close.
func (s *Server) sleep(ctx context.Context, c call, d time.Duration) error {
	t := s.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.done:
		return errConnectionRefused(c)
	}
}
