package cachetest_test

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kreflector/cache/cachetest"
)

// bigConfigMaps creates n ConfigMaps of about 4 KiB each in ns.
func bigConfigMaps(t *testing.T, r *cachetest.Resource, n int) {
	t.Helper()
	for i := range n {
		c := cm("ns", fmt.Sprintf("cm%03d", i))
		c.Data = map[string]string{"blob": strings.Repeat(fmt.Sprintf("%04d", i), 1024)}
		if _, err := r.Create(t.Context(), c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// gzGet sends a GET of path with the Accept-Encoding given (none if
// empty) on a transport that inflates nothing itself.
func gzGet(t *testing.T, srv *cachetest.Server, path, acceptEncoding string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(bounded(t), http.MethodGet, srv.URL()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	if acceptEncoding != "" {
		req.Header.Set("Accept-Encoding", acceptEncoding)
	}
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestHTTPCompressesAsKubeAPIServer: a LIST over 128 KiB is gzipped at
// level 1 for a client whose Accept-Encoding names gzip, with
// Content-Encoding and Vary set; not a smaller one, not for a client that
// does not accept gzip, and nothing with DisableCompression.
func TestHTTPCompressesAsKubeAPIServer(t *testing.T) {
	for _, tc := range []struct {
		name     string
		disable  bool
		n        int
		encoding string
		want     bool
	}{
		{"over 128 KiB, gzip accepted", false, 40, "gzip", true},
		{"among other codings", false, 40, "deflate, gzip;q=0.5", true},
		{"128 KiB or less", false, 30, "gzip", false},
		{"gzip not accepted", false, 40, "", false},
		{"gzip refused", false, 40, "gzip;q=0", false},
		{"DisableCompression", true, 40, "gzip", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, cms := newServer(t, cachetest.Options{DisableCompression: tc.disable})
			srv.Start()
			bigConfigMaps(t, cms, tc.n)
			resp := gzGet(t, srv, "/api/v1/namespaces/ns/configmaps", tc.encoding)
			body := resp.Body
			if got := resp.Header.Get("Content-Encoding") == "gzip"; got != tc.want {
				t.Fatalf("compressed: %v, want %v (headers %v)", got, tc.want, resp.Header)
			}
			if tc.want {
				if v := resp.Header.Get("Vary"); v != "Accept-Encoding" {
					t.Fatalf("Vary %q, want Accept-Encoding", v)
				}
				br := bufio.NewReader(resp.Body)
				if hdr, err := br.Peek(10); err != nil || hdr[8] != 4 {
					t.Fatalf("the gzip header %x (%v) does not say level 1 (XFL 4)", hdr, err)
				}
				zr, err := gzip.NewReader(br)
				if err != nil {
					t.Fatal(err)
				}
				body = zr
			}
			raw, err := io.ReadAll(body)
			if err != nil {
				t.Fatal(err)
			}
			if (len(raw) > 128<<10) != (tc.n == 40) {
				t.Fatalf("the list is %d bytes: the test's sizes are off", len(raw))
			}
			var list struct{ Items []json.RawMessage }
			if err := json.Unmarshal(raw, &list); err != nil || len(list.Items) != tc.n {
				t.Fatalf("%d items, %v", len(list.Items), err)
			}
		})
	}
}

// TestHTTPCompressesWatchListStreams: a WatchList stream is gzipped whole
// for a client that accepts gzip, each event flushed as it is written (the
// initial events and their bookmark arrive while the stream is open);
// another watch is not compressed.
func TestHTTPCompressesWatchListStreams(t *testing.T) {
	srv, cms := newServer(t, cachetest.Options{})
	srv.Start()
	create(t, cms, "ns/a", "ns/b")
	const path = "/api/v1/namespaces/ns/configmaps?watch=true&allowWatchBookmarks=true"
	plain := gzGet(t, srv, path+"&resourceVersion=2", "gzip")
	if ce := plain.Header.Get("Content-Encoding"); ce != "" {
		t.Fatalf("a watch without initial events is compressed: %q", ce)
	}
	resp := gzGet(t, srv, path+"&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=", "gzip")
	if ce := resp.Header.Get("Content-Encoding"); ce != "gzip" {
		t.Fatalf("a WatchList stream's Content-Encoding is %q, want gzip", ce)
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(zr)
	lines.Buffer(nil, 1<<20)
	var types []string
	for len(types) < 3 && lines.Scan() {
		var ev struct{ Type string }
		if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		types = append(types, ev.Type)
	}
	if strings.Join(types, " ") != "ADDED ADDED BOOKMARK" {
		t.Fatalf("events %v on the open stream, want two ADDED and the bookmark (%v)", types, lines.Err())
	}
}
