package cache

import (
	"testing"
	"testing/synctest"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kreflector/cache/cachetest"
)

// Failure loops back off and are reported. On cachetest's server and its
// faults (scripted calls: health_backoff_test.go).

// Watches that end with a 500 (an ERROR event with an InternalError
// status, as kube-apiserver sends when its storage watch fails) while
// Reflector.MaxInternalErrorRetryDuration (5 minutes here) allows
// re-watching from the same resourceVersion: a watch that delivered
// nothing is re-watched after a backoff delay, not at once, so the first
// 10 s see a handful of requests, not a tight loop; none of them relists;
// Degraded(WatchFailing) with the 500 as LastError once the loss lasts the
// grace period; Synced when data flows after the server recovers.
func TestHealthFaultInternalErrorStreamsBackOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newFaultRig(t, cachetest.Options{}, func(r *Reflector) { r.MaxInternalErrorRetryDuration = 5 * time.Minute })
		g.sleepUntil(30 * time.Second)
		from := g.now()
		watchesBefore, listsBefore := g.srv.Stats().Calls[cachetest.VerbWatch], g.srv.Stats().Lists
		g.srv.FailNextWatchStreams(100, cachetest.InternalError())
		g.srv.CloseWatches()
		g.sleepUntil(from + 10*time.Second)
		if n := g.srv.Stats().Calls[cachetest.VerbWatch] - watchesBefore; n > 6 {
			t.Fatalf("%d watch requests in the first 10 s of watches ending with a 500, want at most 6 (a backoff delay between re-watches, not a tight loop)", n)
		}
		g.sleepUntil(from + 11*time.Second)
		g.expectFirstDegraded(from, 10*time.Second, 11*time.Second, ReasonWatchFailing, apierrors.IsInternalError,
			"watches ending with a 500 within MaxInternalErrorRetryDuration")
		g.sleepUntil(from + time.Minute)
		if n := g.srv.Stats().Lists - listsBefore; n != 0 {
			t.Fatalf("%d relists within MaxInternalErrorRetryDuration, want re-watches only", n)
		}
		g.srv.ClearFaults()
		g.write() // the next re-watch, whenever its backoff ends, replays it
		g.awaitSynced(3 * time.Minute)
		g.expect(Synced, ReasonNone, "an event flowed on a re-watch once the server stopped failing watches")
		g.expectConverged()
	})
}
