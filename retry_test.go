package cache

import (
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func TestRetryWindow(t *testing.T) {
	internal := apierrors.NewInternalError(errors.New("boom"))
	t0 := time.Unix(0, 0)
	w := retryWindow{max: time.Minute, quiet: time.Minute}
	w.observe(internal, t0)
	if !w.allows(t0.Add(30 * time.Second)) {
		t.Fatal("a retry within the window must be allowed")
	}
	w.observe(internal, t0.Add(50*time.Second))
	if w.allows(t0.Add(61 * time.Second)) {
		t.Fatal("a run of internal errors older than the window must not be retried")
	}
	w.observe(internal, t0.Add(10*time.Minute))
	if !w.allows(t0.Add(10 * time.Minute)) {
		t.Fatal("a new run after the window was forgotten must be retried")
	}
	w.observe(errors.New("other"), t0.Add(20*time.Minute))
	if !w.first.Equal(t0.Add(10 * time.Minute)) {
		t.Fatal("other errors must not touch the window")
	}
	if (&retryWindow{}).allows(t0) {
		t.Fatal("a zero window never retries")
	}
}

func TestRetryWindowQuietGapStartsNewRun(t *testing.T) {
	internal := apierrors.NewInternalError(errors.New("boom"))
	t0 := time.Unix(0, 0)
	w := retryWindow{max: 90 * time.Second, quiet: time.Minute}
	w.observe(internal, t0)
	w.observe(internal, t0.Add(80*time.Second))
	if !w.first.Equal(t0.Add(80 * time.Second)) {
		t.Fatalf("a gap of a quiet minute starts a new run; first = %v", w.first)
	}
}
