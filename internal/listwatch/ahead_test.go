package listwatch

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"

	"github.com/kreflector/cache/internal/inflate"
	"github.com/kreflector/cache/internal/inflate/gztest"
)

// TestCompressedBodiesAreInflatedAhead: every body a ListWatch reads
// (LIST and WATCH) goes through streamRetrying, which puts a body
// net/http inflates behind the inflating stage, and leaves others as
// they are. On one processor there is no stage (inflate.Ahead).
func TestCompressedBodiesAreInflatedAhead(t *testing.T) {
	list := []byte(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`)
	for _, compress := range []bool{true, false} {
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if compress && r.Header.Get("Accept-Encoding") == "gzip" {
				w.Header().Set("Content-Encoding", "gzip")
				w.Write(gztest.Gzip(list))
				return
			}
			w.Write(list)
		}))
		rc := kubernetes.NewForConfigOrDie(&restclient.Config{Host: hs.URL}).CoreV1().RESTClient()
		for _, watch := range []bool{false, true} {
			body, _, err := streamRetrying(context.Background(), func() *restclient.Request {
				return rc.Get().Resource("pods").VersionedParams(&metav1.ListOptions{Watch: watch}, metav1.ParameterCodec)
			})
			if err != nil {
				t.Fatal(err)
			}
			_, staged := body.(*inflate.Reader)
			got, err := io.ReadAll(body)
			body.Close()
			if staged != (compress && goruntime.GOMAXPROCS(0) > 1) || err != nil || string(got) != string(list) {
				t.Errorf("compressed %v, watch %v: behind the stage: %v; read %q, %v", compress, watch, staged, got, err)
			}
		}
		hs.Close()
	}
}
