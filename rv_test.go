package cache

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache/cachetest"
)

func TestResumePositionChoosesRVs(t *testing.T) {
	var p resumePosition
	if got := p.listRV(); got != "0" {
		t.Errorf("first list RV = %q, want \"0\"", got)
	}
	if got := p.watchListRV(); got != "" {
		t.Errorf("first WatchList RV = %q, want \"\"", got)
	}
	p.synced("10")
	if p.listRV() != "10" || p.watchListRV() != "10" || p.watchRV() != "10" {
		t.Errorf("after sync at 10: list %q, watchList %q, watch %q", p.listRV(), p.watchListRV(), p.watchRV())
	}
	p.markUnavailable()
	if p.listRV() != "" || p.watchListRV() != "" {
		t.Errorf("unavailable: list %q, watchList %q, want both \"\"", p.listRV(), p.watchListRV())
	}
	if p.watchRV() != "10" {
		t.Errorf("a plain watch still resumes from the last RV, got %q", p.watchRV())
	}
	p.synced("20")
	if p.listRV() != "20" {
		t.Errorf("a sync clears unavailability: list RV %q", p.listRV())
	}
}

func TestResumePositionPublishesInBatches(t *testing.T) {
	var p resumePosition
	p.synced("5")
	p.advance("6")
	p.advance("7")
	if got := p.snapshot(); got != "5" {
		t.Fatalf("snapshot before publish = %q, want the last published 5", got)
	}
	p.publish()
	if got := p.snapshot(); got != "7" {
		t.Fatalf("snapshot after publish = %q, want 7", got)
	}
}

func TestStaleRVLoopBreaksAfterThreshold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A lagging watch cache: every list answers RV 10, every watch at 10
		// is "too old". client-go would loop forever.
		expired := watchReply{events: []watch.Event{errEvent(expiredStatus())}, closeAfter: 2 * time.Second}
		stuck := listReply{list: cmList("10", "", cm("a", "5"))}
		lw := newScript(
			[]listReply{stuck, stuck, stuck, {list: cmList("50", "", cm("a", "45"))}},
			[]watchReply{expired, expired, expired})
		lw.noWL = true
		r := NewReflector(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), 0)
		runUntilDrained(t, r, lw)
		calls := lw.recorded()
		want := []string{`LIST rv="0"`, `WATCH rv="10"`, `LIST rv="10"`, `WATCH rv="10"`, `LIST rv="10"`, `WATCH rv="10"`, `LIST rv=""`, `WATCH rv="50"`}
		if len(calls) != len(want) {
			t.Fatalf("calls %q", calls)
		}
		for i := range want {
			if !strings.HasPrefix(calls[i], want[i]) {
				t.Fatalf("call %d = %q, want %s…; all: %q", i, calls[i], want[i], calls)
			}
		}
		checkCounts(t, "Lists", r.Stats().Lists, map[ListCause]uint64{ListInitial: 1, ListExpired: 2, ListStaleRVBreaker: 1}, ListCauses)
	})
}

func TestStaleRVBreakerCanBeTurnedOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		expired := watchReply{events: []watch.Event{errEvent(expiredStatus())}, closeAfter: 2 * time.Second}
		stuck := listReply{list: cmList("10", "", cm("a", "5"))}
		lw := newScript([]listReply{stuck, stuck, stuck, stuck}, []watchReply{expired, expired, expired})
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), ReflectorOptions{UseWatchList: ptr.To(false), StaleRVThreshold: -1})
		runUntilDrained(t, r, lw)
		if calls := lw.recorded(); !strings.HasPrefix(calls[6], `LIST rv="10"`) {
			t.Fatalf("with the breaker off the fourth list stays at RV 10: %q", calls)
		}
	})
}

func TestRetryAfterIsHonoured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		throttled := apierrors.NewTooManyRequests("busy", 45)
		lw := &scriptLW{listAgain: cmList("1", ""), watches: []watchReply{{err: throttled}}}
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), noWatchList)
		runFor(t, r, 2*time.Minute)
		if at := lw.arrivals("WATCH", start); len(at) != 2 || at[1] != 45*time.Second {
			t.Fatalf("watches at %v; the retry must wait the 45 s Retry-After", at)
		}
	})
}

func TestWatchListRefusalIsRemembered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := listReply{list: cmList("10", "", cm("a", "5"))}
		expired := watchReply{events: []watch.Event{ev(watch.Added, cm("b", "11")), errEvent(expiredStatus())}}
		lw := newScript([]listReply{base, base},
			[]watchReply{{err: apierrors.NewBadRequest("unknown parameter sendInitialEvents")}, expired})
		r := NewReflector(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), 0)
		runUntilDrained(t, r, lw)
		calls := lw.recorded()
		if len(calls) != 5 || !strings.HasPrefix(calls[3], "LIST") {
			t.Fatalf("the second cycle must LIST without asking for WatchList again: %q", calls)
		}
	})
}

func TestWatchListRefusalMemoryExpires(t *testing.T) {
	r := NewReflectorWithOptions(newScript(nil, nil), nil, cachetest.NewRecordingStore(nil), ReflectorOptions{WatchListRefusalMemory: time.Minute})
	now := time.Unix(100, 0)
	r.server.watchListRefused(now)
	if r.server.wantsWatchList(now.Add(30*time.Second)) || !r.server.wantsWatchList(now.Add(time.Minute)) {
		t.Fatal("WatchList must be off for exactly the configured minute")
	}
	if classify(atWatchListOpen, apierrors.NewInternalError(context.Canceled), facts{}).refusedWatchList {
		t.Fatal("a transient failure is not a refusal")
	}
	r = NewReflectorWithOptions(newScript(nil, nil), nil, cachetest.NewRecordingStore(nil), ReflectorOptions{WatchListRefusalMemory: -1})
	r.server.watchListRefused(now)
	if !r.server.wantsWatchList(now) {
		t.Fatal("a negative memory must ask again every cycle")
	}
}
