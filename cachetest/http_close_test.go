package cachetest_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kreflector/cache/cachetest"
)

// serverGoroutines returns the stacks of goroutines running the package's
// code or net/http's server side.
func serverGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "kreflector/cache/cachetest.") || strings.Contains(g, "net/http.(*conn).serve") ||
			strings.Contains(g, "net/http.(*Server).Serve") {
			out = append(out, g)
		}
	}
	return out
}

// Close, with watches streaming and a LIST delayed on the server, ends
// them all and returns; afterwards no goroutine of the server remains and
// the port refuses connections.
func TestHTTPCloseEndsEverything(t *testing.T) {
	if g := serverGoroutines(); len(g) > 0 {
		t.Fatalf("server goroutines before the test:\n%s", strings.Join(g, "\n\n"))
	}
	srv, cms, cs := startHTTP(t, cachetest.Options{})
	ctx := bounded(t)
	create(t, cms, "ns/a")
	c := cs.CoreV1().ConfigMaps("ns")
	var watches []watch.Interface
	for range 2 {
		w, err := c.Watch(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		expectNext(ctx, t, w, "ADDED ns/a@1")
		watches = append(watches, w)
	}
	srv.Delay(cachetest.VerbList, time.Hour)
	listed := make(chan error, 1)
	go func() {
		_, err := c.List(ctx, metav1.ListOptions{})
		listed <- err
	}()
	eventually(ctx, t, "the LIST to wait on its delay", func() bool { return srv.Stats().Faults[cachetest.FaultDelay] == 1 })

	closed := make(chan struct{})
	go func() { srv.Close(); close(closed) }()
	select {
	case <-closed:
	case <-ctx.Done():
		t.Fatal("Close did not return")
	}
	for _, w := range watches {
		expectNext(ctx, t, w, "closed")
	}
	// Polling only lets the runtime reap goroutines that have returned.
	eventually(ctx, t, "the server's goroutines to exit", func() bool { return len(serverGoroutines()) == 0 })

	select {
	case err := <-listed:
		if err == nil {
			t.Fatal("the delayed LIST succeeded across Close")
		}
	case <-ctx.Done():
		t.Fatal("the delayed LIST never returned")
	}
	if _, err := c.Get(ctx, "a", metav1.GetOptions{}); !isDialRefused(err) {
		t.Fatalf("get after Close: %v, want a refused dial", err)
	}
}

// A client that stops its watch ends the server's watch: the request's
// context reaches the core.
func TestHTTPClientGoneEndsWatch(t *testing.T) {
	srv, cms, cs := startHTTP(t, cachetest.Options{})
	ctx := bounded(t)
	w, err := cs.CoreV1().ConfigMaps("ns").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	create(t, cms, "ns/a")
	expectNext(ctx, t, w, "ADDED ns/a@1")
	w.Stop()
	// HangWatches counts the open watches without ending them.
	eventually(ctx, t, "the server's watch to end", func() bool { return srv.HangWatches() == 0 })
}

// Start panics when called twice or after Close; URL, RESTConfig and
// Client panic before Start; RESTConfig returns a fresh copy each call.
func TestHTTPStartMisuse(t *testing.T) {
	mustPanic := func(what string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s did not panic", what)
			}
		}()
		f()
	}
	srv := cachetest.NewServer(cachetest.Options{})
	mustPanic("URL before Start", func() { _ = srv.URL() })
	mustPanic("RESTConfig before Start", func() { _ = srv.RESTConfig() })
	mustPanic("Client before Start", func() { _ = srv.Client() })
	srv.Start()
	mustPanic("a second Start", srv.Start)
	a, b := srv.RESTConfig(), srv.RESTConfig()
	a.Host = "elsewhere"
	if b.Host != srv.URL() || a == b || b.ContentType != "application/json" || b.QPS < 100 {
		t.Errorf("RESTConfig: %+v", b)
	}
	if _, err := kubernetes.NewForConfig(b); err != nil {
		t.Error(err)
	}
	srv.Close()
	srv.Close() // a second Close is harmless
	closed := cachetest.NewServer(cachetest.Options{})
	closed.Close()
	mustPanic("Start after Close", closed.Start)
}
