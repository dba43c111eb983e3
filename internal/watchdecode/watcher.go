package watchdecode

import (
	"io"
	"net/http"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
)

// Options tune a watcher.
type Options struct {
	// Workers is how many goroutines decode frames at once. 1: one
	// goroutine cuts, decodes and delivers (cutting JSON objects spares
	// the scan encoding/json's Decoder makes). <= 0: client-go's own
	// decoder chain on one goroutine, as its StreamWatcher runs it.
	Workers int
	// Item, if set, is called with each object decoded from the stream,
	// before its event is delivered, on the goroutine that decoded it:
	// from several goroutines at once when Workers > 1. It must not call
	// Stop. It may see objects that are then dropped: decoded ahead of a
	// frame that fails, or when Stop comes. (Not called for the ERROR
	// event a decoding error turns into.)
	Item func(runtime.Object)
	// LeaveOutManagedFields says the caller drops every object's
	// managedFields (in Item or after delivery), so that they may be left
	// out: a frame a clientset's protobuf chain
	// would decode into a type whose metadata is its field 1 is decoded
	// without them (see internal/protometa) when Workers >= 1.
	LeaveOutManagedFields bool
	// Held, if set, is asked about each ADDED event at the start of a
	// stream (a WatchList's initial events), up to the first frame that
	// is not such an event, before its object is decoded, with the
	// object's namespace, name and non-empty resourceVersion as its
	// bytes hold them, where they can be read exactly: in protobuf, an
	// object of a type whose metadata is its field 1 (protometa.For)
	// that the fast decoding takes; in JSON, an event written as
	// kube-apiserver writes it ({"type":"ADDED","object":…}, compact;
	// any other JSON frame ends the run), whose object the chain decodes
	// into an unstructured object or a type whose ObjectMeta is its
	// "metadata" (jsonmeta.Read, jsonmeta.MetaType). Each decoding
	// goroutine decodes its first object of each apiVersion and kind,
	// learning what the chain makes of them. When Held returns ok, the
	// object is not decoded (nor are its bytes past what is read
	// checked): the event delivered is an ADDED event of the object Held
	// returned (Item is not run on it). The strings alias the stream's
	// buffers and must not be kept. It is called on the decoding
	// goroutines, concurrently when Workers > 1. Only with Workers >= 1.
	Held func(namespace, name, resourceVersion string) (runtime.Object, bool)
	// MediaType is the response's Content-Type, if known. Empty: the
	// stream's first byte tells JSON (whitespace or '{') from protobuf.
	// A media type the reader does not split (neither JSON nor protobuf)
	// is decoded by client-go's chain on one goroutine.
	MediaType string
	// Logger logs how a stream ended (as client-go's StreamWatcher logs
	// it). Zero: klog.Background().
	Logger klog.Logger
}

// reporter makes the ERROR event of a decoding error as the rest client's
// Watch does: a 500 Status with a ClientWatchDecoding cause.
var reporter = apierrors.NewClientErrorReporter(http.StatusInternalServerError, "GET", "ClientWatchDecoding")

// watcher is the watch.Interface of New.
type watcher struct {
	body   io.ReadCloser
	d      *Decoders
	o      Options
	result chan watch.Event // closed by closeResult, once no goroutine sends
	done   chan struct{}    // closed by shut: Stop or the end of the stream
	exited chan struct{}    // closed by closeResult: the watcher's goroutines are over
	once   sync.Once
}

// New returns a watcher over body, the body of a watch response, which
// it owns from now on: the watcher reads it, and closes it on Stop and at
// the end of the stream. d are the client's decoders. It starts the
// watcher's goroutines (see the package documentation) and does not
// block. The result channel is unbuffered, as client-go's, with
// Workers <= 0; with Workers >= 1 it holds up to resultBuffer(Workers)
// events, so that the worker delivering them goes back to decoding
// rather than waiting for the consumer to be scheduled at each event.
func New(body io.ReadCloser, d *Decoders, o Options) watch.Interface {
	if o.Logger.GetSink() == nil {
		o.Logger = klog.Background()
	}
	w := &watcher{
		body:   body,
		d:      d,
		o:      o,
		result: make(chan watch.Event, resultBuffer(o.Workers)),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	var st *streams
	var err error
	if o.MediaType != "" {
		st, err = d.forMedia(o.MediaType)
	}
	if o.Workers <= 0 || err != nil || (st != nil && st.framing == framingNone) {
		go w.sequential(st, err)
	} else {
		startPipeline(w, st, o.Workers)
	}
	return w
}

// ResultChan is the events, in stream order; closed once the stream has
// ended or Stop was called, and every goroutine of the watcher is over.
func (w *watcher) ResultChan() <-chan watch.Event { return w.result }

// Stop closes the body and waits for the watcher's goroutines to exit
// (the result channel is closed by then). Idempotent; safe from any
// goroutine but those calling Options.Item.
func (w *watcher) Stop() {
	w.shut()
	<-w.exited
	w.dropBuffered()
}

// shut closes done and the body, once: every goroutine of the watcher
// then ends, those blocked reading the body when Close makes Read return.
func (w *watcher) shut() {
	w.once.Do(func() {
		close(w.done)
		w.body.Close()
	})
}

// closeResult is the watcher's last act, by its last goroutine: no
// goroutine sends on the result channel any more.
func (w *watcher) closeResult() {
	close(w.result)
	close(w.exited)
}

// send delivers ev; false if the watcher was stopped first (a stopped
// watcher puts nothing more in the result channel's buffer).
func (w *watcher) send(ev watch.Event) bool {
	select {
	case <-w.done:
		return false
	default:
	}
	select {
	case w.result <- ev:
		return true
	case <-w.done:
		return false
	}
}

// resultBuffer is the result channel's capacity for workers: a batch's
// events, delivered without waiting for the consumer, which a worker's
// send makes runnable on the worker's own processor, where it may wait
// for the worker to block (another processor takes it over only after a
// sleep of "3 µs", 50-80 µs under Linux's default timer slack: two
// frames' decoding).
func resultBuffer(workers int) int {
	if workers <= 0 {
		return 0
	}
	return maxBatch
}

// dropBuffered drops the events left in the closed result channel's
// buffer: after Stop, as with an unbuffered channel, none is received.
func (w *watcher) dropBuffered() {
	for range w.result {
	}
}
