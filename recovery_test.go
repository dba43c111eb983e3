package cache

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kreflector/cache/cachetest"
)

// relistDelay plays sc against one Reflector and returns how long after
// the last WATCH before the second LIST that LIST was made.
func relistDelay(t *testing.T, sc scenario, run reflectorUnderTest) time.Duration {
	var delay time.Duration
	synctest.Test(t, func(t *testing.T) {
		lw := newScript(slices.Clone(sc.lists), slices.Clone(sc.watches))
		lw.noWL = sc.noWatchList
		_, stop := startRun(t, func(ctx context.Context) { run(ctx, sc, lw, cachetest.NewRecordingStore(nil)) })
		<-lw.drained
		synctest.Wait()
		stop()
		lw.inflight.Wait()
		lists := 0
		for i, v := range lw.verbs() {
			if v == "LIST" {
				lists++
			}
			if lists == 2 {
				if i == 0 || lw.verbs()[i-1] != "WATCH" {
					t.Fatalf("calls %q: the second LIST does not follow a WATCH", lw.verbs())
				}
				delay = lw.times[i].Sub(lw.times[i-1])
				return
			}
		}
		t.Fatalf("calls %q: no second LIST", lw.verbs())
	})
	return delay
}

// outageThenExpired is an outage (the re-watch refused five times, which
// grows the backoff to several seconds) that ends with the server saying
// the resume resourceVersion is gone, on the watch stream or on the open.
func outageThenExpired(onOpen bool) scenario {
	watches := []watchReply{{events: []watch.Event{ev(watch.Modified, cm("a", "11"))}, closeAfter: 2 * time.Second}}
	for range 5 {
		watches = append(watches, watchReply{err: connectionRefused()})
	}
	if onOpen {
		watches = append(watches, watchReply{err: apierrors.NewResourceExpired("too old resource version")})
	} else {
		watches = append(watches, watchReply{events: []watch.Event{errEvent(expiredStatus())}})
	}
	return scenario{name: "outage then 410", noWatchList: true,
		lists:   []listReply{{list: cmList("10", "", cm("a", "5"))}, {list: cmList("40", "", cm("a", "30"))}},
		watches: watches}
}

// TestRelistAfterOutageNoLaterThanClientGo: once the server answers again,
// even if only to say the resourceVersion is gone, our Reflector relists
// no later than client-go's, which waits the backoff the outage grew.
func TestRelistAfterOutageNoLaterThanClientGo(t *testing.T) {
	for _, onOpen := range []bool{false, true} {
		name := "410 on the stream"
		if onOpen {
			name = "410 on the open"
		}
		t.Run(name, func(t *testing.T) {
			sc := outageThenExpired(onOpen)
			theirs := relistDelay(t, sc, runClientGo)
			ours := relistDelay(t, sc, runOurs)
			t.Logf("relist %v after the 410 (client-go: %v)", ours, theirs)
			if ours > theirs {
				t.Errorf("we relisted %v after the 410, client-go %v", ours, theirs)
			}
			// The initial delay with full jitter is below 1.6 s.
			if ours >= 1600*time.Millisecond {
				t.Errorf("we relisted %v after the 410; the backoff was not reset", ours)
			}
		})
	}
}

// TestBackoffResetStartsOver: failures grow the delay; reset (the server
// reached) starts it over; a repeated reset changes nothing.
func TestBackoffResetStartsOver(t *testing.T) {
	b := newBackoff(defaultBackoff(), defaultBackoffReset)
	now := time.Unix(0, 0)
	var got []string
	for range 4 {
		got = append(got, b.next(now, 0).String())
	}
	b.reset()
	got = append(got, b.next(now, 0).String())
	b.reset()
	b.reset()
	got = append(got, b.next(now, 0).String())
	want := "800ms 1.6s 3.2s 6.4s 800ms 800ms"
	if s := strings.Join(got, " "); s != want {
		t.Fatalf("delays %s, want %s", s, want)
	}
}
