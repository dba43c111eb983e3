package inflate

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
)

// script is a body whose reads give its steps in turn, then io.EOF.
type script struct {
	steps  []step
	closed bool
}

type step struct {
	data string
	err  error
}

func (s *script) Read(p []byte) (int, error) {
	if s.closed {
		return 0, errClosedScript
	}
	if len(s.steps) == 0 {
		return 0, io.EOF
	}
	st := s.steps[0]
	n := copy(p, st.data)
	if n < len(st.data) {
		s.steps[0].data = st.data[n:]
		return n, nil
	}
	s.steps = s.steps[1:]
	return n, st.err
}

func (s *script) Close() error { s.closed = true; return nil }

var errClosedScript = errors.New("read on a closed script")

// readAll reads r to its first error with reads of size n.
func readAll(r io.Reader, n int) ([]byte, error) {
	var out []byte
	p := make([]byte, n)
	for {
		k, err := r.Read(p)
		out = append(out, p[:k]...)
		if err != nil {
			return out, err
		}
	}
}

func TestBytesAndErrorsInOrder(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name  string
		steps []step
		want  error
	}{
		{"clean end", []step{{data: "abc"}, {data: ""}, {data: "def"}}, io.EOF},
		{"data with the error", []step{{data: "abc"}, {data: "def", err: boom}}, boom},
		{"data with EOF", []step{{data: "abc", err: io.EOF}}, io.EOF},
		{"error first", []step{{err: io.ErrUnexpectedEOF}}, io.ErrUnexpectedEOF},
	} {
		for _, size := range []int{1, 2, 1 << 10} {
			t.Run(fmt.Sprintf("%s/reads of %d", tc.name, size), func(t *testing.T) {
				want := ""
				for _, s := range tc.steps {
					want += s.data
				}
				r := New(&script{steps: append([]step(nil), tc.steps...)})
				defer r.Close()
				got, err := readAll(r, size)
				if string(got) != want || err != tc.want {
					t.Fatalf("got %q, %v; want %q, %v", got, err, want, tc.want)
				}
				if _, again := r.Read(make([]byte, 1)); again != tc.want {
					t.Fatalf("a Read after the error gave %v, want %v again", again, tc.want)
				}
			})
		}
	}
}

// endless gives bufSize bytes at each read and counts the reads.
type endless struct{ reads int }

func (e *endless) Read(p []byte) (int, error) { e.reads++; return len(p), nil }
func (e *endless) Close() error               { return nil }

func TestReadsAheadBoundedBuffers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		body := &endless{}
		r := New(body)
		defer r.Close()
		synctest.Wait()
		if body.reads != buffers {
			t.Fatalf("%d reads ahead of a consumer that read nothing, want %d (every buffer, no more)", body.reads, buffers)
		}
		// The buffer being consumed is one of them: it goes back once
		// the next one is taken.
		if _, err := io.ReadFull(r, make([]byte, bufSize)); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if body.reads != buffers {
			t.Fatalf("%d reads once one buffer was consumed, want %d", body.reads, buffers)
		}
		if _, err := io.ReadFull(r, make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if body.reads != buffers+1 {
			t.Fatalf("%d reads once the next buffer was taken, want %d", body.reads, buffers+1)
		}
	})
}

func TestCloseEndsABlockedRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pr, pw := io.Pipe()
		defer pw.Close()
		r := New(pr)
		done := make(chan error)
		go func() {
			_, err := r.Read(make([]byte, 10))
			done <- err
		}()
		synctest.Wait()
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; !errors.Is(err, io.ErrClosedPipe) {
			t.Fatalf("a Read blocked at Close gave %v, want the closed body's %v", err, io.ErrClosedPipe)
		}
		if n, err := r.Read(make([]byte, 10)); n != 0 || !errors.Is(err, io.ErrClosedPipe) {
			t.Fatalf("a Read after Close gave %d, %v", n, err)
		}
	})
}

func TestReadAfterCloseGivesNothingBuffered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		body := &script{steps: []step{{data: "abc"}, {data: "def"}}}
		r := New(body)
		synctest.Wait() // both chunks read ahead
		r.Close()
		if n, err := r.Read(make([]byte, 10)); n != 0 || err != errClosedScript {
			t.Fatalf("a Read after Close gave %d, %v; want the closed body's error", n, err)
		}
	})
}

// gzipped is data compressed at level 1, as kube-apiserver compresses.
func gzipped(t testing.TB, data []byte) []byte {
	var b bytes.Buffer
	w, err := gzip.NewWriterLevel(&b, gzip.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(data)
	w.Close()
	return b.Bytes()
}

// serving answers every request with body, declared gzip if gz.
func serving(body []byte, gz bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if gz {
			w.Header().Set("Content-Encoding", "gzip")
		}
		w.Write(body)
	})
}

func TestCompressedTellsNetHTTPsInflatingBodies(t *testing.T) {
	plain := bytes.Repeat([]byte("pods "), 1000)
	gz := gzipped(t, plain)
	for _, tc := range []struct {
		name      string
		http2     bool
		gzip      bool
		disable   bool // the transport's DisableCompression
		askItself bool // the request asks for gzip itself: net/http does not inflate
		want      bool
	}{
		{"HTTP/1 gzip", false, true, false, false, true},
		{"HTTP/2 gzip", true, true, false, false, true},
		{"HTTP/1 not compressed", false, false, false, false, false},
		{"HTTP/2 not compressed", true, false, false, false, false},
		{"DisableCompression", false, false, true, false, false},
		{"the request asked itself", false, true, false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(serving(map[bool][]byte{true: gz, false: plain}[tc.gzip], tc.gzip))
			srv.EnableHTTP2 = tc.http2
			srv.StartTLS()
			defer srv.Close()
			tr := srv.Client().Transport.(*http.Transport).Clone()
			tr.DisableCompression = tc.disable
			defer tr.CloseIdleConnections()
			req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
			if tc.askItself {
				req.Header.Set("Accept-Encoding", "gzip")
			}
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if got := Compressed(resp.Body); got != tc.want {
				t.Fatalf("Compressed(%T) = %v, want %v", resp.Body, got, tc.want)
			}
			if resp.ProtoMajor != map[bool]int{true: 2, false: 1}[tc.http2] {
				t.Fatalf("served over %s", resp.Proto)
			}
			if got := ahead(resp.Body, 2); (got != resp.Body) != tc.want {
				t.Fatalf("on 2 processors, ahead put a stage in front: %v, want %v", got != resp.Body, tc.want)
			}
			if got := ahead(resp.Body, 1); got != resp.Body {
				t.Fatalf("on 1 processor, ahead put a stage in front (%T)", got)
			}
		})
	}
}
