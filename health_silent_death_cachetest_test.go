package cache_test

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/cachetest"
)

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
		g.expectFirstDegraded(31*time.Second, 45*time.Second, 45*time.Second, cache.ReasonWatchFailing, lost,
			"a black-holed watch noticed by the transport 45 s in")
		g.expect(cache.Synced, cache.ReasonNone, "after the relist")
		g.expectConverged()
	})
}
