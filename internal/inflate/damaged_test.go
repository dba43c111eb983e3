package inflate

import (
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kreflector/cache/internal/inflate/gztest"
)

// outcome is what reading a body to its end gave.
type outcome struct {
	data []byte
	err  string // the error's type and text
}

func (o outcome) String() string { return fmt.Sprintf("%d bytes, %s", len(o.data), o.err) }

func readOutcome(r io.Reader, size int) outcome {
	data, err := readAll(r, size)
	return outcome{data, fmt.Sprintf("%T: %v", err, err)}
}

// TestDamagedBodiesFailAsWhenReadDirectly serves gzip bodies damaged at
// every position class through net/http's transport, over HTTP/1 and
// HTTP/2, and reads each directly (as client-go reads it) and through the
// stage: the same bytes, then the same error.
func TestDamagedBodiesFailAsWhenReadDirectly(t *testing.T) {
	plain := []byte(strings.Repeat(`{"kind":"Pod","metadata":{"name":"a"}},`, 20000))
	for _, h2 := range []bool{false, true} {
		for _, d := range gztest.Damaged(gztest.Gzip(plain)) {
			t.Run(fmt.Sprintf("http2=%v/%s", h2, d.Name), func(t *testing.T) {
				srv := httptest.NewUnstartedServer(serving(d.Body, true))
				srv.EnableHTTP2 = h2
				srv.StartTLS()
				defer srv.Close()
				get := func() io.ReadCloser {
					resp, err := srv.Client().Get(srv.URL)
					if err != nil {
						t.Fatal(err)
					}
					return resp.Body
				}
				direct := get()
				want := readOutcome(direct, 32<<10)
				direct.Close()
				body := get()
				if len(d.Body) > 0 && !Compressed(body) { // an empty body is http.NoBody
					t.Fatalf("%T is not taken for an inflating body", body)
				}
				staged := Ahead(body)
				defer staged.Close()
				if got := readOutcome(staged, 32<<10); got.err != want.err || string(got.data) != string(want.data) {
					t.Fatalf("through the stage: %v; read directly: %v", got, want)
				}
			})
		}
	}
}
