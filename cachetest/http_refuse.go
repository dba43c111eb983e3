package cachetest

import (
	"context"
	"net"
	"net/http"
	"os"
	"syscall"
)

// A refused connection has no HTTP status: a client only ever sees one
// when nothing listens. The HTTP side simulates it as a server down for a
// moment (the contract is documented on Server.RESTConfig):
//
//   - the request's connection is reset (hijacked, closed with SO_LINGER
//     0, which sends a TCP RST) without a response;
//   - for a GET, the server is then down until the next connection
//     attempt: requests arriving meanwhile are reset without being served,
//     the next dial through the server's client transport fails with
//     ECONNREFUSED, and a connection accepted from any other client ends
//     the down period.
//
// Go's transport retries an idempotent request whose reused connection
// was reset, so a GET's retry finds the server down and its dial refused,
// and the caller gets the very error of a server that is not running.

// refuse answers a request the core refused as a connection.
func (h *httpServer) refuse(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && !h.srv.isClosed() {
		h.mu.Lock()
		h.down = true
		h.mu.Unlock()
	}
	resetConn(w)
}

// resetConn drops the request's connection without a response.
func resetConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// The connection cannot be taken over (it is not HTTP/1): let
		// net/http drop it.
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // best effort: without it the client sees EOF
	}
	_ = conn.Close() // nothing to report: the point is to break it
}

func (h *httpServer) isDown() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.down
}

// dial is the client transport's dialer: it refuses the connection, as
// the kernel refuses one to a port nothing listens on, while the server is
// down (and brings it back up), and dials the server otherwise.
func (h *httpServer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	h.mu.Lock()
	wasDown := h.down
	h.down = false
	h.mu.Unlock()
	if wasDown {
		return nil, &net.OpError{Op: "dial", Net: network, Addr: h.ln.Addr(),
			Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}
