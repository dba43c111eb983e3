package cache

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache/cachetest"
)

// A connection that dies silently: the loss dates from the watch's last sign
// of life. On scripted calls, then on cachetest's server and its faults.

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
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), ReflectorOptions{
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

// On cachetest's server and its faults.

// A dead connection: the watch stays open but nothing more reaches the
// client (a connection black-holed by a NAT or proxy, which TCP does not
// notice), while the server keeps writing. The watch has had a bookmark
// (cachetest sends one every BookmarkInterval, 1 minute by default, once
// the resource has changed), so the stall detector ends it no later than
// the stall window (3 minutes) after that bookmark: Degraded(Stalled) at
// once, and Synced again, with the store equal to the server, as soon as
// the re-watch from the last resourceVersion delivers what was missed.
func TestHealthFaultDeadConnectionIsEndedAsStalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newFaultRig(t, cachetest.Options{}, nil)
		g.write() // after the watch opened: its bookmarks carry this change
		g.sleepUntil(70 * time.Second)
		lastBookmark := g.r.Stats().LastBookmark.Sub(g.start)
		if lastBookmark != time.Minute {
			t.Fatalf("last bookmark at %v, want 1m0s (cachetest's BookmarkInterval after the watch opened)", lastBookmark)
		}
		hungAt := g.now()
		g.srv.HangWatches()
		deadline := lastBookmark + 3*time.Minute
		for at := hungAt + 10*time.Second; at < deadline; at += 10 * time.Second {
			g.sleepUntil(at)
			g.write()
		}
		g.sleepUntil(deadline - time.Second)
		if !g.behind() {
			t.Fatalf("at %v the store holds every object, though the watch hung at %v and %d writes followed", g.now(), hungAt, g.written-2)
		}
		g.sleepUntil(deadline + time.Second)
		g.expectFirstDegraded(hungAt, 0, deadline-hungAt, ReasonStalled,
			func(err error) bool { return errors.Is(err, ErrWatchStalled) },
			"a hung watch after a bookmark at 1m0s")
		g.expect(Synced, ReasonNone, "after the re-watch replayed the missed writes")
		g.expectConverged()
		if n := g.r.Stats().WatchEnds[WatchStalled]; n != 1 {
			t.Fatalf("%d watches ended as stalled, want 1", n)
		}
	})
}

// cachetest's LoseWatches cuts the watch off as a black-hole does and, 45 s
// later (client-go's HTTP/2 health check at its defaults), ends it with the
// error client-go reports. The loss is dated from the watch's last event,
// 46 s before that, so health is Degraded the moment the error arrives,
// although the relist that follows completes at once; then Synced, and the
// write made during the black-hole is in the store.
func TestHealthSilentDeathFromCachetestFault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newFaultRig(t, cachetest.Options{BookmarkInterval: time.Hour}, nil)
		g.sleepUntil(30 * time.Second)
		g.write() // the watch's last sign of life
		g.sleepUntil(31 * time.Second)
		if n := g.srv.LoseWatches(45 * time.Second); n != 1 {
			t.Fatalf("%d watches cut off, want 1", n)
		}
		g.write() // lost with the watch
		g.sleepUntil(2 * time.Minute)
		lost := func(err error) bool { return err != nil && strings.Contains(err.Error(), "client connection lost") }
		g.expectFirstDegraded(31*time.Second, 45*time.Second, 45*time.Second, ReasonWatchFailing, lost,
			"a black-holed watch noticed by the transport 45 s in")
		g.expect(Synced, ReasonNone, "after the relist")
		g.expectConverged()
	})
}
