package cachetest_test

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/kreflector/cache/cachetest"
)

// isDialRefused says whether err is what a client gets from a port nothing
// listens on: a *url.Error around a dial *net.OpError with ECONNREFUSED.
func isDialRefused(err error) bool {
	var ue *url.Error
	var op *net.OpError
	return errors.As(err, &ue) && errors.As(err, &op) && op.Op == "dial" && utilnet.IsConnectionRefused(err)
}

// A ConnectionRefused fault on a read reaches a clientset on a kept-alive
// connection as a refused dial, at once, and only for the calls it was
// injected for.
func TestHTTPConnectionRefusedReads(t *testing.T) {
	srv, cms, cs := startHTTP(t, cachetest.Options{})
	ctx := bounded(t)
	create(t, cms, "ns/a")
	c := cs.CoreV1().ConfigMaps("ns")
	if _, err := c.List(ctx, metav1.ListOptions{}); err != nil { // opens the connection
		t.Fatal(err)
	}

	srv.FailNext(cachetest.VerbList, 1, cachetest.ConnectionRefused())
	if _, err := c.List(ctx, metav1.ListOptions{}); !isDialRefused(err) {
		t.Fatalf("list: %v, want a refused dial", err)
	}
	if _, err := c.List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("list after the fault: %v", err)
	}
	srv.FailNext(cachetest.VerbWatch, 1, cachetest.ConnectionRefused())
	if _, err := c.Watch(ctx, metav1.ListOptions{}); !isDialRefused(err) {
		t.Fatalf("watch: %v, want a refused dial", err)
	}
	if _, err := c.Get(ctx, "a", metav1.GetOptions{}); err != nil {
		t.Fatalf("get after the fault: %v", err)
	}
	st := srv.Stats()
	if st.Faults[cachetest.FaultConnectionRefused] != 2 || st.Calls[cachetest.VerbList] != 3 || st.Calls[cachetest.VerbWatch] != 1 {
		t.Fatalf("refused %d, lists %d, watches %d; want 2, 3, 1 (the retries never reach the server)",
			st.Faults[cachetest.FaultConnectionRefused], st.Calls[cachetest.VerbList], st.Calls[cachetest.VerbWatch])
	}
}

// When the refused read was the first on its connection, Go does not
// retry it: client-go's REST client retries the reset GET after a second
// and then sees the refused dial.
func TestHTTPConnectionRefusedFreshConnection(t *testing.T) {
	srv, _, cs := startHTTP(t, cachetest.Options{})
	ctx := bounded(t)
	srv.FailNext(cachetest.VerbList, 1, cachetest.ConnectionRefused())
	if _, err := cs.CoreV1().ConfigMaps("ns").List(ctx, metav1.ListOptions{}); !isDialRefused(err) {
		t.Fatalf("list: %v, want a refused dial", err)
	}

	// A plain client sees each step: the reset, then the refusal, then
	// the server back.
	srv2, _, _ := startHTTP(t, cachetest.Options{})
	srv2.FailNext(cachetest.VerbList, 1, cachetest.ConnectionRefused())
	for i, want := range []func(error) bool{utilnet.IsConnectionReset, isDialRefused, func(err error) bool { return err == nil }} {
		resp, err := srv2.Client().Get(srv2.URL() + "/api/v1/configmaps")
		if err == nil {
			resp.Body.Close()
		}
		if !want(err) {
			t.Fatalf("request %d: %v", i, err)
		}
	}
}

// Writes are not retried: the caller gets the reset connection, and the
// server is not down afterwards.
func TestHTTPConnectionRefusedWrites(t *testing.T) {
	srv, cms, cs := startHTTP(t, cachetest.Options{})
	ctx := bounded(t)
	c := cs.CoreV1().ConfigMaps("ns")
	if _, err := c.Create(ctx, cm("", "a"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	srv.FailNext(cachetest.VerbCreate, 1, cachetest.ConnectionRefused())
	if _, err := c.Create(ctx, cm("", "b"), metav1.CreateOptions{}); !utilnet.IsConnectionReset(err) {
		t.Fatalf("create: %v, want a reset connection", err)
	}
	if _, err := c.Get(ctx, "a", metav1.GetOptions{}); err != nil {
		t.Fatalf("get after a refused write: %v", err)
	}
	if objs, _ := cms.Objects(); len(objs) != 1 {
		t.Fatalf("%d objects, want only a", len(objs))
	}
}

// While the server is down, a request on another client's kept-alive
// connection is reset too, and that client's retry is the refused dial
// that brings the server back.
func TestHTTPConnectionRefusedDownForEveryone(t *testing.T) {
	srv, _, _ := startHTTP(t, cachetest.Options{})
	get := func(c *http.Client) error {
		resp, err := c.Get(srv.URL() + "/api/v1/configmaps")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	ours := srv.Client()
	if err := get(ours); err != nil { // leaves a kept-alive connection
		t.Fatal(err)
	}
	other := &http.Client{Transport: &http.Transport{}}
	defer other.CloseIdleConnections()
	srv.FailNext(cachetest.VerbList, 1, cachetest.ConnectionRefused())
	if err := get(other); !utilnet.IsConnectionReset(err) {
		t.Fatalf("the faulted request: %v, want a reset", err)
	}
	if err := get(ours); !isDialRefused(err) {
		t.Fatalf("a request while down: %v, want a refused dial", err)
	}
	for _, c := range []*http.Client{other, ours} {
		if err := get(c); err != nil {
			t.Fatalf("after the refusal: %v", err)
		}
	}
	if n := srv.Stats().Calls[cachetest.VerbList]; n != 4 {
		t.Fatalf("%d lists reached the server, want 4: none while it was down", n)
	}
}
