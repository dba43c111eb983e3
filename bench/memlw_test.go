package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// memLW is the memory benchmarks' ListerWatcher, the same for every
// implementation: a LIST answers the requested page of the current
// version, read from its page source (a file, or one page in memory) and
// decoded afresh (as a client decodes a response: typed, unstructured or
// metadata-only, as its codec says); a watch is handed to the benchmark,
// which decides what it delivers. It does not offer WatchList, so both
// informers LIST.
type memLW struct {
	dec apiruntime.Decoder
	// newList returns what a page decodes into: a PodList, an
	// UnstructuredList, a PartialObjectMetadataList.
	newList func() apiruntime.Object

	mu    sync.Mutex
	pages pageSource
	// opened receives every watch served, in order.
	opened chan *memWatch
}

// newMemLW answers LISTs from pages, decoded by codec's decoder into
// its newList.
func newMemLW(codec memCodec, pages pageSource) *memLW {
	return &memLW{dec: codec.dec, newList: codec.newList, pages: pages, opened: make(chan *memWatch, 64)}
}

// serve makes later LISTs answer from pages.
func (l *memLW) serve(pages pageSource) {
	l.mu.Lock()
	l.pages = pages
	l.mu.Unlock()
}

func (l *memLW) IsWatchListSemanticsUnSupported() bool { return true }

func (l *memLW) List(opts metav1.ListOptions) (apiruntime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

func (l *memLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

func (l *memLW) ListWithContext(_ context.Context, opts metav1.ListOptions) (apiruntime.Object, error) {
	page := 0
	if opts.Continue != "" {
		k, err := strconv.Atoi(strings.TrimPrefix(opts.Continue, "page-"))
		if err != nil {
			return nil, fmt.Errorf("membench: bad continue token %q", opts.Continue)
		}
		page = k
	}
	l.mu.Lock()
	pages := l.pages
	l.mu.Unlock()
	b, err := pages.read(page)
	if err != nil {
		return nil, err
	}
	obj, _, err := l.dec.Decode(b, nil, l.newList())
	return obj, err
}

func (l *memLW) WatchWithContext(context.Context, metav1.ListOptions) (watch.Interface, error) {
	w := &memWatch{ch: make(chan watch.Event), done: make(chan struct{})}
	l.opened <- w
	return w, nil
}

// pageSource is what a memLW answers LISTs from: page k's bytes.
type pageSource interface {
	read(k int) ([]byte, error)
}

// onePage is a pageSource of a single page, held in memory.
type onePage []byte

func (p onePage) read(k int) ([]byte, error) {
	if k != 0 {
		return nil, fmt.Errorf("membench: no page %d of one", k)
	}
	return p, nil
}

// memWatch delivers what the benchmark sends, until the Reflector stops
// it.
type memWatch struct {
	ch   chan watch.Event
	done chan struct{}
	once sync.Once
}

func (w *memWatch) ResultChan() <-chan watch.Event { return w.ch }

func (w *memWatch) Stop() { w.once.Do(func() { close(w.done) }) }

// send delivers ev; false if the watch was stopped first.
func (w *memWatch) send(ev watch.Event) bool {
	select {
	case w.ch <- ev:
		return true
	case <-w.done:
		return false
	}
}

// expire ends the watch as kube-apiserver ends one whose resourceVersion
// was compacted: an ERROR event with a 410 Expired status.
func (w *memWatch) expire() bool {
	return w.send(watch.Event{Type: watch.Error, Object: &metav1.Status{
		Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired,
		Message: "too old resource version",
	}})
}
