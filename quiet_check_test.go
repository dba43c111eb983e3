package cache

import (
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache/cachetest"
)

// healthTimeline records when health changed, from start.
type healthTimeline struct {
	mu      sync.Mutex
	start   time.Time
	changes []Health
	at      []time.Duration
}

func (h *healthTimeline) record(x Health) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.changes = append(h.changes, x)
	h.at = append(h.at, time.Since(h.start))
}

// firstDegraded is the first Degraded health and when it came.
func (h *healthTimeline) firstDegraded() (Health, time.Duration, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, c := range h.changes {
		if c.State == Degraded {
			return c, h.at[i], true
		}
	}
	return Health{}, 0, false
}

func quietReflector(lw *scriptLW, tl *healthTimeline) *Reflector {
	return NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), ReflectorOptions{
		UseWatchList:      ptr.To(false),
		QuietCheckAfter:   5 * time.Second,
		QuietCheckTimeout: 3 * time.Second,
		OnHealthChange:    tl.record,
	})
}

// A watch whose connection went black: nothing comes, and nothing tells
// the Reflector (the HTTP/2 health check would, 45 s in). With quiet checks
// on, the LIST it sends after 5 s of silence gets no answer within its 3 s
// timeout: the loss is dated from the watch's last event (1 s in), so
// health is Degraded a grace period after it, at 11 s, with an error that
// says why. The watch stays open, and data arriving on it ends the loss.
func TestQuietCheckNoticesASilentDeath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := watch.NewFakeWithChanSize(4, false)
		// One LIST answered; every later LIST (the checks) hangs.
		lw := newScript([]listReply{{list: cmList("5", "", cm("a", "4"))}}, []watchReply{{w: w}})
		tl := &healthTimeline{start: time.Now()}
		r := quietReflector(lw, tl)
		startReflector(t, r)
		time.Sleep(time.Second)
		w.Add(cm("b", "6"))
		time.Sleep(30 * time.Second)
		h, at, ok := tl.firstDegraded()
		if !ok || at != 11*time.Second {
			t.Fatalf("Degraded at %v (%v), want at 11 s: a grace period after the last event", at, ok)
		}
		if h.Reason != ReasonWatchFailing || !IsQuietCheckFailed(h.LastError) {
			t.Fatalf("health %+v, want WatchFailing with ErrQuietCheckFailed", h)
		}
		w.Add(cm("c", "7"))
		synctest.Wait()
		if h := r.Health(); h.State != Synced {
			t.Fatalf("data on the same watch must end the loss: %+v", h)
		}
		if n := countCalls(lw, "WATCH"); n != 1 {
			t.Fatalf("%d watch requests: the check must leave the watch open", n)
		}
	})
}

// A quiet watch on a working connection: every check is answered, with
// data or with an error status (a 403 is an answer too), so health stays
// Synced; the checks come one per 5 s of silence.
func TestQuietCheckAnsweredKeepsHealth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := watch.NewFakeWithChanSize(4, false)
		lists := []listReply{{list: cmList("5", "", cm("a", "4"))}}
		for i := range 40 {
			reply := listReply{list: cmList("5", "", cm("a", "4"))}
			if i%2 == 1 {
				reply = listReply{err: apierrors.NewForbidden(cmGVR, "", nil)}
			}
			lists = append(lists, reply)
		}
		lw := newScript(lists, []watchReply{{w: w}})
		tl := &healthTimeline{start: time.Now()}
		r := quietReflector(lw, tl)
		startReflector(t, r)
		time.Sleep(2*time.Minute + time.Second)
		if h, at, ok := tl.firstDegraded(); ok {
			t.Fatalf("a false alarm at %v: %+v", at, h)
		}
		checks := countCalls(lw, "LIST") - 1
		if checks != 24 {
			t.Fatalf("%d checks in 2 min of silence, want 24 (one per 5 s)", checks)
		}
		for _, c := range lw.recorded()[1:] {
			if strings.HasPrefix(c, "LIST") && !strings.Contains(c, `rv="" limit=1`) {
				t.Fatalf("a check asked for more than one object, or not at the latest RV: %s", c)
			}
		}
	})
}
