package cache

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
)

// WaitForSync: the cause of not being synced, or none.

func TestWaitForSyncReturnsTheCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		forbidden := apierrors.NewForbidden(cmGVR, "", errors.New("no list rights"))
		lw := newScript([]listReply{{err: forbidden}, {err: forbidden}}, nil)
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, &recordingStore{}, ReflectorOptions{UseWatchList: ptr.To(false)})
		ctx, _ := startReflector(t, r)
		wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
		defer wcancel()
		err := r.WaitForSync(wctx)
		if !apierrors.IsForbidden(err) || !errors.Is(err, ErrNotSynced) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("WaitForSync = %v; want Forbidden, ErrNotSynced and the deadline", err)
		}
		h := r.Health()
		if h.State != Degraded || h.Reason != ReasonForbidden || h.HasSynced {
			t.Fatalf("health %+v", h)
		}
	})
}

func TestWaitForSyncWithoutError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := NewReflector(newScript(nil, nil), nil, &recordingStore{}, 0)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if err := r.WaitForSync(ctx); !errors.Is(err, ErrNotSynced) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v", err)
		}
		if s := HealthState(7).String(); s != "HealthState(7)" {
			t.Fatalf("unknown state string %q", s)
		}
	})
}
