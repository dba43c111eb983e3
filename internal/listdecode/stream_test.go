package listdecode

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// counting counts the bytes read through it.
type counting struct {
	r io.Reader
	n atomic.Int64
}

func (c *counting) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// TestStreams checks that a list is decoded while it arrives: Meta is
// called, and items are decoded, before most of the body has been read;
// Item sees every item once.
func TestStreams(t *testing.T) {
	pods := podList(300)
	for name, c := range map[string]struct {
		tgt  Target
		body []byte
		n    int
	}{
		"typed json":     {Target{Typed: &corev1.PodList{}}, jsonOf(t, pods), 300},
		"typed protobuf": {Target{Typed: &corev1.PodList{}}, protobufOf(t, pods, scheme.Scheme), 300},
		"unstructured":   {Target{Unstructured: true}, jsonOf(t, pods), 300},
		"metadata json":  {Target{Metadata: true}, jsonOf(t, partials()), 40},
		"metadata pb":    {Target{Metadata: true}, protobufOf(t, partials(), metaScheme), 40},
	} {
		t.Run(name, func(t *testing.T) {
			for _, w := range []int{1, 2} {
				r := &counting{r: readers["chunks"](c.body)}
				var metaAt, firstItemAt int64 = -1, -1
				var mu sync.Mutex
				items := 0
				var meta metav1.ListMeta
				_, err := Decode(context.Background(), r, c.tgt, Options{
					Workers: w,
					Meta:    func(m metav1.ListMeta) { metaAt, meta = r.n.Load(), m },
					Item: func(runtime.Object) {
						mu.Lock()
						defer mu.Unlock()
						if items == 0 {
							firstItemAt = r.n.Load()
						}
						items++
					},
				})
				if err != nil {
					t.Fatal(err)
				}
				half := int64(len(c.body) / 2)
				if metaAt < 0 || metaAt > half || firstItemAt < 0 || firstItemAt > half {
					t.Errorf("workers %d: Meta at byte %d, first item at %d, of %d", w, metaAt, firstItemAt, len(c.body))
				}
				if meta.ResourceVersion != listMeta.ResourceVersion || meta.Continue != listMeta.Continue {
					t.Errorf("workers %d: Meta got %+v", w, meta)
				}
				if items != c.n {
					t.Errorf("workers %d: Item called %d times, want %d", w, items, c.n)
				}
			}
		})
	}
}
