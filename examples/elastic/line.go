package main

import (
	"context"
	"io"
	"net/http"
	"sync"
)

// line is one replica's network connection to the API server: an
// http.RoundTripper around the server's transport that can be cut. Once
// cut, it goes silent as the connection of a SIGKILLed process's host
// does: new requests hang until their context ends, and responses already
// streaming (the informer's watch) deliver nothing more, without closing.
type line struct {
	inner http.RoundTripper

	mu  sync.Mutex
	cut chan struct{} // closed by silence
}

func newLine(inner http.RoundTripper) *line {
	return &line{inner: inner, cut: make(chan struct{})}
}

// silence cuts the line; it stays cut.
func (l *line) silence() {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.cut:
	default:
		close(l.cut)
	}
}

func (l *line) isCut() bool {
	select {
	case <-l.cut:
		return true
	default:
		return false
	}
}

// hang waits until ctx ends, or done closes, and returns why.
func hang(ctx context.Context, done <-chan struct{}) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-done:
		return io.ErrClosedPipe
	}
}

func (l *line) RoundTrip(req *http.Request) (*http.Response, error) {
	if l.isCut() {
		return nil, hang(req.Context(), nil)
	}
	resp, err := l.inner.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &silentBody{ReadCloser: resp.Body, line: l, ctx: req.Context(), closed: make(chan struct{})}
	return resp, nil
}

// silentBody is a response body that stops delivering once its line is
// cut: what a read returns after the cut is dropped, and the next read
// hangs until the request's context ends or the body is closed.
type silentBody struct {
	io.ReadCloser
	line      *line
	ctx       context.Context
	closeOnce sync.Once
	closed    chan struct{}
}

func (b *silentBody) Read(p []byte) (int, error) {
	if !b.line.isCut() {
		n, err := b.ReadCloser.Read(p)
		if !b.line.isCut() {
			return n, err
		}
	}
	return 0, hang(b.ctx, b.closed)
}

func (b *silentBody) Close() error {
	b.closeOnce.Do(func() { close(b.closed) })
	return b.ReadCloser.Close()
}
