package cachetest

import (
	"fmt"
	"net"
	"net/http"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// httpServer serves a Server's resources over HTTP on loopback. It is a
// thin adapter: every request about a resource is answered by the core's
// verbs (so faults, delays and counters apply as in process), decoded from
// and encoded to the Kubernetes REST API's JSON.
//
// It tracks every connection and every running handler so that close can
// wait for all of them, as httptest.Server.Close does.
type httpServer struct {
	srv    *Server
	ln     net.Listener
	hs     *http.Server
	url    string
	client *http.Transport
	// served is closed when the accept loop has returned.
	served chan struct{}

	mu   sync.Mutex
	cond *sync.Cond
	// conns are the connections accepted and not yet closed or hijacked.
	conns map[net.Conn]struct{}
	// handlers counts ServeHTTP calls in progress.
	handlers int
	// down is set by a refused read request until the next connection
	// attempt (see refuse).
	down bool
}

// Start serves the server's resources over HTTP on a loopback port, as
// httptest.NewServer does, until Close. Resources added later are served
// too. It panics if it cannot listen, if the server was started already,
// or if it was closed.
//
// The server speaks the Kubernetes REST API (JSON only) for its
// resources: GET list and watch (a stream of JSON events), get, create
// (POST), update (PUT), delete and deletecollection (DELETE), with query
// parameters decoded as client-go encodes them; errors are metav1.Status
// objects with their HTTP codes (429 and 504 with a Retry-After header when
// the status carries a delay). It also serves discovery (/api, /apis and
// the resource lists of each group version), /version, /healthz, /livez
// and /readyz. Patch and protobuf are not served.
//
// Typed resources are served under the version client-go's scheme
// (k8s.io/client-go/kubernetes/scheme) registers for their Go type in
// their group; a typed resource the scheme does not know is answered 404
// with a message saying so (serve it as Unstructured instead).
// Unstructured resources are served under their apiVersion.
//
// A ConnectionRefused fault cannot be a status; see Server.RESTConfig for
// what clients see.
func (s *Server) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		panic("cachetest: Start on a closed Server")
	case s.web != nil:
		panic("cachetest: Server.Start called twice")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		if ln, err = net.Listen("tcp6", "[::1]:0"); err != nil {
			panic(fmt.Sprintf("cachetest: failed to listen on a loopback port: %v", err))
		}
	}
	s.web = newHTTPServer(s, ln)
}

func newHTTPServer(s *Server, ln net.Listener) *httpServer {
	h := &httpServer{
		srv:    s,
		ln:     ln,
		url:    "http://" + ln.Addr().String(),
		served: make(chan struct{}),
		conns:  map[net.Conn]struct{}{},
	}
	h.cond = sync.NewCond(&h.mu)
	h.client = &http.Transport{DialContext: h.dial, MaxIdleConnsPerHost: 25}
	h.hs = &http.Server{Handler: h, ConnState: h.connState}
	go func() {
		defer close(h.served)
		_ = h.hs.Serve(ln) // returns http.ErrServerClosed once close has run
	}()
	return h
}

// started returns the HTTP side of the server; it panics if Start was not
// called, naming the method called too early.
func (s *Server) started(method string) *httpServer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.web == nil {
		panic("cachetest: Server." + method + " called before Start")
	}
	return s.web
}

// URL returns the base URL of the started server, e.g.
// "http://127.0.0.1:40123". It panics before Start.
func (s *Server) URL() string { return s.started("URL").url }

// RESTConfig returns a new client configuration for the started server
// (each call returns a fresh copy the caller may modify): JSON both ways
// (so that clients do not ask for protobuf, which is not served), a
// client-side rate limit high enough (QPS 1000, burst 2000) not to
// distort tests, and the server's own transport, shared by every config
// it returns and by Client, whose idle connections Close closes. It panics
// before Start.
//
// A ConnectionRefused fault is simulated as a server that is down for a
// moment. The connection that carried the failed request is reset (TCP
// RST, no response). For get, list and watch (GET requests) the server
// then stays down until the next connection attempt: requests arriving
// meanwhile on other open connections are reset the same way without
// being served, and the next connection this transport dials fails with
// ECONNREFUSED (a new connection accepted from any other client ends the
// down period too, since a listening socket cannot refuse it). Go's
// transport retries a reset GET on a new connection, so a client of this
// config gets the same error as from a server that is not running: a
// *url.Error around a dial *net.OpError with ECONNREFUSED
// ("dial tcp ...: connect: connection refused"), recognised by
// utilnet.IsConnectionRefused. (When the reset connection was new, Go
// does not retry; client-go's REST client then retries the GET after one
// second and is refused.) Writes (create, update, delete) are not retried
// by Go or client-go: they get the reset itself, "read: connection reset
// by peer", recognised by utilnet.IsConnectionReset. Clients with their
// own transport see resets only.
func (s *Server) RESTConfig() *rest.Config {
	h := s.started("RESTConfig")
	return &rest.Config{
		Host: h.url,
		ContentConfig: rest.ContentConfig{
			ContentType:        runtime.ContentTypeJSON,
			AcceptContentTypes: runtime.ContentTypeJSON,
		},
		QPS:       1000,
		Burst:     2000,
		Transport: h.client,
	}
}

// Client returns an HTTP client for the started server using the
// transport RESTConfig's configurations share. It panics before Start.
func (s *Server) Client() *http.Client {
	return &http.Client{Transport: s.started("Client").client}
}

// connState tracks connections for close.
func (h *httpServer) connState(c net.Conn, state http.ConnState) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch state {
	case http.StateNew:
		h.conns[c] = struct{}{}
		h.down = false
	case http.StateClosed, http.StateHijacked:
		delete(h.conns, c)
		h.cond.Broadcast()
	}
}

// enter and leave bracket every handler.
func (h *httpServer) enter() {
	h.mu.Lock()
	h.handlers++
	h.mu.Unlock()
}

func (h *httpServer) leave() {
	h.mu.Lock()
	h.handlers--
	h.cond.Broadcast()
	h.mu.Unlock()
}

// close stops serving: it closes the listener and every connection (which
// ends streaming watches and cancels the contexts of requests in flight),
// closes the client transport's idle connections, and waits until the
// accept loop, every connection and every handler have ended. The core
// must be closed first, so that handlers waiting on it return.
func (h *httpServer) close() {
	_ = h.hs.Close() // the only error is the listener's, which is closing anyway
	<-h.served
	h.client.CloseIdleConnections()
	h.mu.Lock()
	for len(h.conns) > 0 || h.handlers > 0 {
		h.cond.Wait()
	}
	h.mu.Unlock()
}

// typeFor returns the served type of group and resource, with its wire
// kinds, if version is the one it is served under.
func (h *httpServer) typeFor(gv schema.GroupVersion, resource string) (*resourceType, wire, error) {
	t := h.srv.lookupType(schema.GroupResource{Group: gv.Group, Resource: resource})
	if t == nil {
		return nil, wire{}, errNoRoute()
	}
	kinds, err := wireOf(t)
	if err != nil {
		return nil, wire{}, newStatusError(http.StatusNotFound, metav1.StatusReasonNotFound, err.Error())
	}
	if kinds.obj.GroupVersion() != gv {
		return nil, wire{}, errNoRoute()
	}
	return t, kinds, nil
}
