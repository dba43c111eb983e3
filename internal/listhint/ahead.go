package listhint

import (
	"context"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// MaxAhead is the most pages requested ahead at once: with the page being
// decoded, at most MaxAhead+1 pages are in memory, where a LIST without a
// pipeline holds one.
const MaxAhead = 2

// Fetch is one page's call, made under ctx.
type Fetch func(ctx context.Context) (runtime.Object, error)

// page is a page requested ahead: its options, and its result once done
// is closed.
type page struct {
	opts   metav1.ListOptions
	cancel context.CancelFunc
	done   chan struct{}
	obj    runtime.Object
	err    error
}

// Ahead (the ListWatch's) requests, with fetch in a goroutine of its own, the page a caller
// will ask for with opts, unless that page is already ahead or the hint
// is closed. If MaxAhead pages are ahead, the request waits and is made
// when Take hands one of them over (only the latest such request waits:
// pages follow one another). It does not block.
func (h *Hint) Ahead(opts metav1.ListOptions, fetch Fetch) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.find(opts) >= 0 {
		return
	}
	if len(h.ahead) >= MaxAhead {
		h.waiting = &pending{opts: opts, fetch: fetch}
		return
	}
	h.startLocked(opts, fetch)
}

// pending is a page to request ahead once a slot is free.
type pending struct {
	opts  metav1.ListOptions
	fetch Fetch
}

// startLocked requests the page of opts with fetch under the hint's
// context; the call is joined by Close.
func (h *Hint) startLocked(opts metav1.ListOptions, fetch Fetch) {
	ctx, cancel := context.WithCancel(h.ctx)
	p := &page{opts: opts, cancel: cancel, done: make(chan struct{})}
	h.ahead = append(h.ahead, p)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer close(p.done)
		p.obj, p.err = fetch(ctx)
	}()
}

// Take (the ListWatch's) returns the page of opts if it was requested ahead, once its call
// returned (ok true), or ok false at once if it was not. A request for
// another page than the oldest ahead means the caller went its own way (a
// retry, a fallback): every page ahead is then dropped and its call
// cancelled. If ctx ends first, Take returns ctx's error.
func (h *Hint) Take(ctx context.Context, opts metav1.ListOptions) (obj runtime.Object, err error, ok bool) {
	if h == nil {
		return nil, nil, false
	}
	h.mu.Lock()
	if len(h.ahead) == 0 {
		h.mu.Unlock()
		return nil, nil, false
	}
	p := h.ahead[0]
	if !reflect.DeepEqual(p.opts, opts) {
		h.dropLocked()
		h.mu.Unlock()
		return nil, nil, false
	}
	h.ahead = h.ahead[1:]
	if w := h.waiting; w != nil && len(h.ahead) < MaxAhead {
		h.waiting = nil
		h.startLocked(w.opts, w.fetch)
	}
	h.mu.Unlock()
	select {
	case <-p.done:
		p.cancel()
		return p.obj, p.err, true
	case <-ctx.Done():
		p.cancel()
		h.mu.Lock()
		h.unused++ // taken, but its answer is not used
		h.mu.Unlock()
		return nil, ctx.Err(), true
	}
}

// find returns the index of the page of opts among those ahead, or -1.
func (h *Hint) find(opts metav1.ListOptions) int {
	for i, p := range h.ahead {
		if reflect.DeepEqual(p.opts, opts) {
			return i
		}
	}
	return -1
}

// dropLocked cancels every page ahead and forgets them and the one
// waiting (not requested yet); Close still waits for their calls. The
// pages ahead count as unused.
func (h *Hint) dropLocked() {
	h.waiting = nil
	h.unused += len(h.ahead)
	for _, p := range h.ahead {
		p.cancel()
	}
	h.ahead = nil
}

// Next (the ListWatch's) returns the options of the page after one asked with opts whose
// list carried continue token next: a continued LIST repeats neither the
// resourceVersion nor its match.
func Next(opts metav1.ListOptions, next string) metav1.ListOptions {
	opts.Continue = next
	opts.ResourceVersion, opts.ResourceVersionMatch = "", ""
	return opts
}
