package listdecode

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// TestItemsReadSoFarAreDecodedBeforeTheNextRead: the items split off a
// body are handed to the workers before the body is read again, though
// they do not fill a batch: a server that pauses mid-list does not hold
// them back.
func TestItemsReadSoFarAreDecodedBeforeTheNextRead(t *testing.T) {
	for ct, body := range map[string][]byte{ctJSON: jsonOf(t, podList(3)), ctProtobuf: protobufOf(t, podList(3), scheme.Scheme)} {
		synctest.Test(t, func(t *testing.T) {
			pr, pw := io.Pipe()
			var decoded atomic.Int32
			done := make(chan error, 1)
			go func() {
				_, err := Decode(context.Background(), pr, Target{Typed: &corev1.PodList{}},
					Options{Workers: 2, Item: func(runtime.Object) { decoded.Add(1) }})
				done <- err
			}()
			// All but the last byte: every item is whole, the list is not.
			pw.Write(body[:len(body)-1])
			synctest.Wait()
			if got := decoded.Load(); got != 3 {
				t.Fatalf("%s: %d of the 3 whole items decoded while the body waits", ct, got)
			}
			pw.Write(body[len(body)-1:])
			pw.Close()
			if err := <-done; err != nil {
				t.Fatalf("%s: %v", ct, err)
			}
		})
	}
}

// TestItemsGoToTheWorkersInBatches: a body read whole reaches the workers
// in batches of jobBatch items, not one item at a time.
func TestItemsGoToTheWorkersInBatches(t *testing.T) {
	s := newSink(context.Background(), mustPlan(t), mediaProtobuf, Options{Workers: 2})
	for range 2*jobBatch + 3 {
		if err := s.add(nil); err != nil {
			t.Fatal(err)
		}
		if len(s.pending) == 0 && s.n%jobBatch != 0 {
			t.Fatalf("a batch went out after %d items", s.n)
		}
	}
	if len(s.pending) != 3 {
		t.Fatalf("%d items pending after two full batches and 3, want 3", len(s.pending))
	}
	s.close()
	if len(s.pending) != 0 {
		t.Fatal("close left items pending")
	}
}

func mustPlan(t *testing.T) *plan {
	t.Helper()
	p, err := newPlan(Target{Typed: &corev1.PodList{}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
