package listwatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	restclient "k8s.io/client-go/rest"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache/internal/inflate"
	"github.com/kreflector/cache/internal/listdecode"
	"github.com/kreflector/cache/internal/listhint"
)

// ListDecoder decodes one LIST response body, read as it arrives, into
// the list the client would have returned, as listdecode.Decode does with
// o: on up to o.Workers goroutines, o.Meta called as soon as the list's
// metadata is known, o.Item run on each item once decoded (concurrently).
type ListDecoder func(ctx context.Context, body io.Reader, o listdecode.Options) (apiruntime.Object, error)

// REST is a resource on a REST client, for a ListWatch that reads its
// LIST responses itself (see NewREST).
type REST struct {
	// Request returns the GET request of a LIST with opts, built exactly
	// as the client the ListWatch stands for builds it (path, parameters,
	// content types, timeout).
	Request func(opts metav1.ListOptions) *restclient.Request
	// Decode decodes a LIST body as that client's decoder does.
	Decode ListDecoder
	// Watch opens a watch as that client does.
	Watch func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// maxTransportRetries is how often a LIST or WATCH whose connection failed
// before any response (reset, EOF, a lost HTTP/2 connection) is tried
// again, and transportRetryWait how long after each failure, as client-go's
// Request.Do and Request.Watch try a GET again (their default MaxRetries,
// and the one-second Retry-After they give such a failure).
const (
	maxTransportRetries = 10
	transportRetryWait  = time.Second
)

// retryTransport waits before another try after a transport failure; false
// if ctx ended first.
func retryTransport(ctx context.Context) bool {
	t := time.NewTimer(transportRetryWait)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// NewREST returns a ListWatch over r whose LIST streams the response body
// into r.Decode with GOMAXPROCS workers instead of decoding it on the
// calling goroutine, and which, under a Reflector's LIST, keeps the
// ListWatch's side of the contract internal/listhint states: it runs the
// Reflector's item function on the decode workers, leaves managedFields
// out when told, and requests the next page as soon as the current
// page's continue token is known.
// Its WATCH is r.Watch. tweak, if not nil, is applied to
// the options of every LIST and WATCH.
//
// It is never inlined: Direct knows its ListWatches by the code of their
// LIST function, which an inlined copy would have anew.
//
//go:noinline
func NewREST(r REST, tweak func(*metav1.ListOptions)) *clientgocache.ListWatch {
	apply := func(opts *metav1.ListOptions) {
		if tweak != nil {
			tweak(opts)
		}
	}
	list := func(ctx context.Context, opts metav1.ListOptions) (apiruntime.Object, error) {
		apply(&opts)
		return r.list(ctx, opts)
	}
	watchFn := func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		apply(&opts)
		return r.Watch(ctx, opts)
	}
	return &clientgocache.ListWatch{
		ListFunc:             func(opts metav1.ListOptions) (apiruntime.Object, error) { return list(context.Background(), opts) },
		WatchFunc:            func(opts metav1.ListOptions) (watch.Interface, error) { return watchFn(context.Background(), opts) },
		ListWithContextFunc:  list,
		WatchFuncWithContext: watchFn,
	}
}

// list answers one LIST call: from a page requested ahead if the hint
// has it, else with a request of its own; either way the page after it is
// requested ahead.
func (r REST) list(ctx context.Context, opts metav1.ListOptions) (apiruntime.Object, error) {
	h := listhint.From(ctx)
	obj, err, ok := h.Take(ctx, opts)
	if !ok {
		return r.fetch(ctx, opts, h)
	}
	if err == nil {
		r.ahead(h, opts, obj)
	}
	return obj, err
}

// ahead requests the page after list, asked with opts, if it has a
// continue token and the hint has room (a page fetched ahead could not
// request its own successor while MaxAhead pages were ahead).
func (r REST) ahead(h *listhint.Hint, opts metav1.ListOptions, list apiruntime.Object) {
	if m, ok := list.(metav1.ListInterface); ok {
		r.aheadOf(h, opts, m.GetContinue())
	}
}

// aheadOf requests, through h, the page after the one asked with opts
// whose continue token is token ("": the last page, nothing to request).
func (r REST) aheadOf(h *listhint.Hint, opts metav1.ListOptions, token string) {
	if h == nil || token == "" {
		return
	}
	next := listhint.Next(opts, token)
	h.Ahead(next, func(ctx context.Context) (apiruntime.Object, error) { return r.fetch(ctx, next, h) })
}

// fetch makes the LIST call of opts and decodes its body as it arrives.
func (r REST) fetch(ctx context.Context, opts metav1.ListOptions, h *listhint.Hint) (apiruntime.Object, error) {
	if opts.TimeoutSeconds != nil && *opts.TimeoutSeconds > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(*opts.TimeoutSeconds)*time.Second)
		defer cancel()
	}
	body, err := r.stream(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	meta := func(m metav1.ListMeta) {
		if ctx.Err() == nil { // a page dropped while it arrives asks for no more
			r.aheadOf(h, opts, m.Continue)
		}
	}
	in := &readErr{r: body}
	o := listdecode.Options{Workers: runtime.GOMAXPROCS(0), Meta: meta, Item: h.Item(), Expect: int(opts.Limit),
		LeaveOutManagedFields: h.LeaveOutManagedFields()}
	if h != nil {
		o.Owned, o.Held = h.Owned, h.HeldFunc()
	}
	obj, err := r.Decode(ctx, in, o)
	if err != nil {
		if in.err != nil && !errors.Is(in.err, io.EOF) {
			return nil, fmt.Errorf("unexpected error when reading response body. Please retry. Original error: %w", in.err)
		}
		return nil, err
	}
	h.Itemized(obj)
	return obj, nil
}

// stream sends the request of opts and returns its body, trying again a
// second after a transport failure, as Request.Do does for a GET.
func (r REST) stream(ctx context.Context, opts metav1.ListOptions) (io.ReadCloser, error) {
	body, _, err := streamRetrying(ctx, func() *restclient.Request { return r.Request(opts) })
	return body, err
}

// streamRetrying sends the request req makes and returns its body; a body
// net/http inflates as it is read (the server gzipped it for a transport
// that asked) comes behind a stage of its own (inflate.Ahead, from
// GOMAXPROCS 2 on), so that the inflating runs ahead of the splitter and
// decoders. A
// transport failure before any response is tried again a second later, up
// to maxTransportRetries times, as Request.Do and Request.Watch try a GET
// again. exhausted says the last try failed so (err is its error).
func streamRetrying(ctx context.Context, req func() *restclient.Request) (body io.ReadCloser, exhausted bool, err error) {
	for attempt := 1; ; attempt++ {
		body, err := req().Stream(ctx)
		switch {
		case err == nil:
			return inflate.Ahead(body), false, nil
		case !retryableTransport(err):
			return nil, false, err
		case attempt > maxTransportRetries:
			return nil, true, err
		case !retryTransport(ctx):
			return nil, false, err
		}
	}
}

// retryableTransport says whether err, a request's failure before any
// response, is one client-go retries a GET after.
func retryableTransport(err error) bool {
	return utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) || utilnet.IsHTTP2ConnectionLost(err)
}

// readErr remembers the error its reader last returned, so that a failed
// read is told from a body that does not decode.
type readErr struct {
	r   io.Reader
	err error
}

func (e *readErr) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.err = err
	}
	return n, err
}
