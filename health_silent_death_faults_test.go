package cache

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kreflector/cache/cachetest"
)

// A connection that dies silently: the loss dates from the watch's last sign
// of life. On cachetest's server and its faults (scripted calls:
// health_silent_death_test.go).

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
