package cache

import (
	"errors"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// A connection that dies silently: the loss dates from the watch's last sign
// of life. Scripted calls (cachetest's faults:
// health_silent_death_faults_test.go).

// clientLost is the ERROR event client-go's watch decoder sends when the
// HTTP/2 health check gives up on the connection.
func clientLost() runtime.Object {
	return apierrors.NewClientErrorReporter(http.StatusInternalServerError, "GET", "ClientWatchDecoding").
		AsObject(errors.New("unable to decode an event from the watch stream: http2: client connection lost"))
}

// A connection that dies silently is only noticed when the transport's
// health check gives up on it (45 s in at client-go's defaults). The loss
// of touch began at the watch's last sign of life, so health is Degraded
// as soon as the error arrives, not a grace period later.
func TestHealthSilentDeathDatesFromLastSignOfLife(t *testing.T) {
	// lastSign is when the watch last delivered something; the loss is
	// noticed 45 s in; want is when health turns Degraded: at once if the
	// last sign is older than the grace period, else a grace period after it.
	for _, c := range []struct {
		name           string
		lastSign, want time.Duration
	}{
		{"silent for 44 s", time.Second, 45 * time.Second},
		{"silent for 5 s", 40 * time.Second, 50 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) { runSilentDeath(t, c.lastSign, c.want) })
	}
}

func runSilentDeath(t *testing.T, lastSign, want time.Duration) {
	synctest.Test(t, func(t *testing.T) {
		// One LIST, then the watch the test drives; later LISTs block (the
		// connection is black-holed), later watches stay open and silent.
		w := watch.NewFakeWithChanSize(4, false)
		lw := newScript([]listReply{{list: cmList("5", "", cm("a", "4"))}}, []watchReply{{w: w}})
		start := time.Now()
		var mu sync.Mutex
		var degradedAt time.Duration
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, &recordingStore{}, ReflectorOptions{
			UseWatchList: ptr.To(false),
			OnHealthChange: func(h Health) {
				mu.Lock()
				defer mu.Unlock()
				if h.State == Degraded && degradedAt == 0 {
					degradedAt = time.Since(start)
				}
			},
		})
		startReflector(t, r)
		time.Sleep(lastSign)
		w.Add(cm("b", "6"))
		time.Sleep(45*time.Second - lastSign)
		w.Error(clientLost())
		time.Sleep(20 * time.Second)
		mu.Lock()
		defer mu.Unlock()
		if degradedAt < want || degradedAt > want+100*time.Millisecond {
			t.Fatalf("Degraded %v in, want %v", degradedAt, want)
		}
		if h := r.Health(); h.State != Degraded || h.Reason != ReasonWatchFailing {
			t.Fatalf("health %+v", h)
		}
	})
}
