package cache

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// listReply is what the scripted ListerWatcher answers to one LIST, after
// delay (a call that blocks; the caller's context ending cuts it short)
// and, if block is set, once block is closed (a client that ignores its
// context: the caller's context ending does not cut that wait short).
type listReply struct {
	list  runtime.Object
	err   error
	delay time.Duration
	block <-chan struct{}
}

// watchReply is what it answers to one WATCH, after delay and block (as a
// listReply's): an error, a watch that delivers events and then closes
// (after closeAfter), ends with an error event, or stays open forever
// (hang), or w, a watch the test drives; with none, neither a watch nor
// an error (a broken ListerWatcher's answer).
type watchReply struct {
	delay      time.Duration
	block      <-chan struct{}
	err        error
	events     []watch.Event
	closeAfter time.Duration
	hang       bool
	w          watch.Interface
	none       bool
}

// scriptLW is the tests' one scripted ListerWatcher. It answers LIST and
// WATCH calls from two queues and records every call with the (synctest)
// time it arrived at. When a queue runs dry (and listAgain or watchAgain
// does not answer instead), LISTs block until their context ends, and
// each WATCH gets a fresh fake watch, open and silent until the test
// feeds it (current is the latest); drained, if made (see newScript), is
// closed at the first such call. A reply is forgotten once
// served, as a client forgets a decoded page. Its zero value, with
// lists and noWL set as needed, is a ListerWatcher a test drives step by
// step: LISTs from the queue, every watch fed by the test.
type scriptLW struct {
	mu       sync.Mutex
	lists    []listReply
	watches  []watchReply
	calls    []string
	times    []time.Time
	watchers []*watch.FakeWatcher
	drained  chan struct{}
	once     sync.Once
	noWL     bool
	inflight sync.WaitGroup
	// onContinue, if set, is called before a LIST of a continued page is
	// answered.
	onContinue func()
	// listAgain, if set, answers every LIST once the list queue is dry,
	// instead of blocking (a server that always lists the same objects).
	listAgain runtime.Object
	// watchAgain, if set, answers every WATCH once the watch queue is dry,
	// instead of a fresh silent watch (a server that always answers the
	// same way).
	watchAgain *watchReply
	// onCall, if set, is called with each call as recorded (e.g.
	// `WATCH rv="1" ...`), after it is recorded and before it is answered,
	// without the script's lock held: a test's hook for what happens on
	// the server's side of a call (a clock that moves, a round trip).
	onCall func(call string)
}

func newScript(lists []listReply, watches []watchReply) *scriptLW {
	return &scriptLW{lists: lists, watches: watches, drained: make(chan struct{})}
}

func (s *scriptLW) IsWatchListSemanticsUnSupported() bool { return s.noWL }

// record records a call as it arrives; s.mu is held.
func (s *scriptLW) record(call string) {
	s.calls = append(s.calls, call)
	s.times = append(s.times, time.Now())
}

// hook runs the onCall hook, if any, on call; s.mu is not held.
func (s *scriptLW) hook(call string) {
	if s.onCall != nil {
		s.onCall(call)
	}
}

// holdReply waits for block to close (whatever ctx says), then for delay
// unless ctx ends first, whose error it then returns.
func holdReply(ctx context.Context, block <-chan struct{}, delay time.Duration) error {
	if block != nil {
		<-block
	}
	if delay <= 0 {
		return nil
	}
	select {
	case <-time.After(delay):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// arrivals is how long after since each call of verb (LIST or WATCH)
// arrived, in order.
func (s *scriptLW) arrivals(verb string, since time.Time) []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Duration
	for i, c := range s.calls {
		if strings.HasPrefix(c, verb+" ") {
			out = append(out, s.times[i].Sub(since))
		}
	}
	return out
}

// dry marks the script drained: a queue has run dry.
func (s *scriptLW) dry() {
	s.once.Do(func() {
		if s.drained != nil {
			close(s.drained)
		}
	})
}

// current is the fake watch handed out last, once the watch queue ran dry.
func (s *scriptLW) current(t *testing.T) *watch.FakeWatcher {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.watchers) == 0 {
		t.Fatal("no watch is open")
	}
	return s.watchers[len(s.watchers)-1]
}

// verbs is the verb (LIST or WATCH) of each call so far.
func (s *scriptLW) verbs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.calls))
	for i, c := range s.calls {
		out[i], _, _ = strings.Cut(c, " ")
	}
	return out
}

// countCalls is how many calls lw got whose verb is verb (LIST or WATCH).
func countCalls(lw *scriptLW, verb string) int {
	n := 0
	for _, c := range lw.recorded() {
		if strings.HasPrefix(c, verb) {
			n++
		}
	}
	return n
}

func (s *scriptLW) List(o metav1.ListOptions) (runtime.Object, error) {
	return s.ListWithContext(context.Background(), o)
}

func (s *scriptLW) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return s.WatchWithContext(context.Background(), o)
}

func (s *scriptLW) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	call := "LIST " + describeOptions(o)
	s.mu.Lock()
	s.record(call)
	queued := len(s.lists) > 0
	var r listReply
	if queued {
		r = s.lists[0]
		s.lists[0] = listReply{}
		s.lists = s.lists[1:]
	}
	s.mu.Unlock()
	s.hook(call)
	switch {
	case !queued && s.listAgain != nil:
		return s.listAgain.DeepCopyObject(), nil
	case !queued:
		s.dry()
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if o.Continue != "" && s.onContinue != nil {
		s.onContinue()
	}
	if err := holdReply(ctx, r.block, r.delay); err != nil {
		return nil, err
	}
	return r.list, r.err
}

func (s *scriptLW) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	call := "WATCH " + describeOptions(o)
	s.mu.Lock()
	s.record(call)
	var r watchReply
	switch {
	case len(s.watches) > 0:
		r, s.watches = s.watches[0], s.watches[1:]
	case s.watchAgain != nil:
		r = *s.watchAgain
	default:
		w := watch.NewFakeWithChanSize(64, false)
		s.watchers = append(s.watchers, w)
		s.mu.Unlock()
		s.hook(call)
		s.dry()
		return w, nil
	}
	s.mu.Unlock()
	s.hook(call)
	if err := holdReply(ctx, r.block, r.delay); err != nil {
		return nil, err
	}
	if r.err != nil || r.w != nil || r.none {
		return r.w, r.err
	}
	return s.serve(r), nil
}

// serve is a watch delivering r's events, then closing as r says.
func (s *scriptLW) serve(r watchReply) watch.Interface {
	ch := make(chan watch.Event, len(r.events))
	for _, e := range r.events {
		ch <- e
	}
	w := watch.NewProxyWatcher(ch)
	switch {
	case r.hang:
		s.dry()
	case r.closeAfter > 0:
		s.inflight.Add(1)
		go func() {
			defer s.inflight.Done()
			select {
			case <-time.After(r.closeAfter):
				close(ch)
			case <-w.StopChan():
			}
		}()
	default:
		close(ch)
	}
	return w
}

func (s *scriptLW) recorded() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

// describeOptions renders the options a test compares. The watch timeout
// is random, so only its range is checked and recorded.
func describeOptions(o metav1.ListOptions) string {
	var b strings.Builder
	fmt.Fprintf(&b, "rv=%q", o.ResourceVersion)
	if o.ResourceVersionMatch != "" {
		fmt.Fprintf(&b, " match=%s", o.ResourceVersionMatch)
	}
	if o.Limit != 0 {
		fmt.Fprintf(&b, " limit=%d", o.Limit)
	}
	if o.Continue != "" {
		fmt.Fprintf(&b, " continue=%s", o.Continue)
	}
	if o.AllowWatchBookmarks {
		b.WriteString(" bookmarks")
	}
	if o.SendInitialEvents != nil {
		fmt.Fprintf(&b, " initial=%v", *o.SendInitialEvents)
	}
	if t := o.TimeoutSeconds; t != nil {
		inRange := *t >= 300 && *t < 600
		fmt.Fprintf(&b, " timeoutInRange=%v", inRange)
	}
	if o.ShardSelector != "" {
		fmt.Fprintf(&b, " shard=%s", o.ShardSelector)
	}
	return b.String()
}

// objectID renders obj as "namespace/name@resourceVersion" (a string as
// itself, any other non-object by its type).
func objectID(obj interface{}) string {
	switch o := obj.(type) {
	case nil:
		return ""
	case string:
		return o
	case metav1.Object:
		return o.GetNamespace() + "/" + o.GetName() + "@" + o.GetResourceVersion()
	default:
		return fmt.Sprintf("%T", obj)
	}
}

// Object builders for scripts.

func cm(name, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
}

func cmList(rv, cont string, items ...*corev1.ConfigMap) *corev1.ConfigMapList {
	l := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: rv, Continue: cont}}
	for _, i := range items {
		l.Items = append(l.Items, *i)
	}
	return l
}

func ev(t watch.EventType, o runtime.Object) watch.Event { return watch.Event{Type: t, Object: o} }

func bookmark(rv string, initialEnd bool) watch.Event {
	o := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}}
	if initialEnd {
		o.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	}
	return ev(watch.Bookmark, o)
}

func errEvent(status *metav1.Status) watch.Event { return ev(watch.Error, status) }

func errEOF() error           { return io.EOF }
func errUnexpectedEOF() error { return io.ErrUnexpectedEOF }
