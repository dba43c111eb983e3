package cachetest

import (
	"compress/gzip"
	"net/http"
	"strings"
)

// gzipThreshold is the size over which kube-apiserver compresses a
// response body (APIResponseCompression), for a client that accepts gzip.
const gzipThreshold = 128 << 10

// acceptsGzip says whether r's Accept-Encoding names gzip with a quality
// other than zero, as net/http's transport asks for it ("gzip").
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		q := strings.ReplaceAll(params, " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}

// compresses says whether the server compresses its answer to r, a body
// of size bytes (or a stream, size < 0): as kube-apiserver does, unless
// Options.DisableCompression: a body over 128 KiB, or a WatchList stream,
// for a client that accepts gzip.
func (h *httpServer) compresses(r *http.Request, size int) bool {
	return !h.srv.opts.DisableCompression && acceptsGzip(r) && (size < 0 || size > gzipThreshold)
}

// gzipped is data compressed at level 1, kube-apiserver's level.
func gzipped(data []byte) []byte {
	var b strings.Builder
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed) // a valid level
	zw.Write(data)                                   // a strings.Builder does not fail
	zw.Close()
	return []byte(b.String())
}

// markGzip sets the headers of a compressed response.
func markGzip(w http.ResponseWriter) {
	w.Header().Set("Content-Encoding", "gzip")
	w.Header().Add("Vary", "Accept-Encoding")
}
