package bench

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"sync"
)

// The cold-start server's compression (cells with gzip on): as
// kube-apiserver compresses by default, gzip at level 1 for a request
// whose Accept-Encoding names gzip (client-go's transport sends it unless
// DisableCompression is set): a LIST response over 128 KiB, and a
// WatchList stream whole. The compressed bytes are made before the cell's
// process starts (warm), so that compressing costs the measured sync
// nothing: kube-apiserver compresses on cores of its own. The WatchList
// stream is one member with no flush inside but at its end, as a server
// that writes faster than the client reads would send it, and left open
// (flushed, not closed: no trailer) as the watch stays open: a closed
// member would have the client's gzip reader wait for the next member's
// header before it hands over the last bytes.

// coldGzipThreshold is the size over which kube-apiserver compresses.
const coldGzipThreshold = 128 << 10

// coldZipped holds the compressed pieces of one file, by offset.
type coldZipped struct {
	mu     sync.Mutex
	path   string
	pieces map[int64][]byte
}

// get returns n bytes of path from off, compressed (a whole member,
// or, for a watch stream, one left open); made (and kept, the pieces of
// another file dropped) if not made yet.
func (z *coldZipped) get(path string, off, n int64) ([]byte, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.path != path {
		z.path, z.pieces = path, map[int64][]byte{}
	}
	if b, ok := z.pieces[off]; ok {
		return b, nil
	}
	b, err := gzipPiece(path, off, n, strings.HasSuffix(path, coldStream))
	if err == nil {
		z.pieces[off] = b
	}
	return b, err
}

// gzipPiece compresses n bytes of path from off at level 1: a member
// closed, or flushed and left open.
func gzipPiece(path string, off, n int64, open bool) ([]byte, error) {
	f, _, err := openSized(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed) // a valid level
	if _, err := io.Copy(zw, io.NewSectionReader(f, off, n)); err != nil {
		return nil, err
	}
	end := zw.Close
	if open {
		end = zw.Flush
	}
	if err := end(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// acceptsGzip says whether r's Accept-Encoding names gzip.
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, _, _ := strings.Cut(part, ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			return true
		}
	}
	return false
}

// warmGzip makes the compressed pieces a cell of encoding and mode is
// served from.
func (s *coldServer) warmGzip(encoding, mode string) error {
	switch mode {
	case "paged":
		p := s.pages[encoding]
		for i := range p.offs {
			if int64(p.lens[i]) <= coldGzipThreshold {
				continue
			}
			if _, err := s.zipped.get(coldPath(s.dir, s.n, encoding, coldPages), p.offs[i], int64(p.lens[i])); err != nil {
				return err
			}
		}
		return nil
	case "whole":
		return s.warmWholeFile(coldPath(s.dir, s.n, encoding, coldWhole))
	}
	return s.warmWholeFile(coldPath(s.dir, s.n, encoding, coldStream))
}

func (s *coldServer) warmWholeFile(path string) error {
	f, size, err := openSized(path)
	if err != nil {
		return err
	}
	f.Close()
	if size > coldGzipThreshold {
		_, err = s.zipped.get(path, 0, size)
	}
	return err
}

// zippedBody is n bytes of path from off, compressed, if gz and n is over
// the threshold (else nil), with the compressed response's headers set
// on w.
func (s *coldServer) zippedBody(w http.ResponseWriter, path string, off, n int64, gz bool) ([]byte, error) {
	if !gz || n <= coldGzipThreshold {
		return nil, nil
	}
	b, err := s.zipped.get(path, off, n)
	if err == nil {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Vary", "Accept-Encoding")
	}
	return b, err
}
