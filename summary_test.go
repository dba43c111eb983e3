package cache

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"
)

// Health and Stats print as one short readable line (%v and %s included).
func TestHealthString(t *testing.T) {
	at := time.Date(2026, 1, 2, 15, 4, 5, 678_000_000, time.UTC)
	cases := []struct {
		h    Health
		want string
	}{
		{Health{}, "Syncing"},
		{Health{State: Syncing, Since: at}, "Syncing since 2026-01-02T15:04:05.678Z"},
		{Health{State: Synced, Since: at, HasSynced: true}, "Synced since 2026-01-02T15:04:05.678Z"},
		{Health{State: Degraded, Reason: ReasonListFailing, LastError: errors.New("boom"), Since: at},
			"Degraded(ListFailing) since 2026-01-02T15:04:05.678Z, never synced: last error: boom"},
		{Health{State: Degraded, Reason: ReasonStalled, Since: at, HasSynced: true},
			"Degraded(Stalled) since 2026-01-02T15:04:05.678Z, has synced"},
		{Health{State: Syncing, LastError: errors.New("refused"), Since: at},
			"Syncing since 2026-01-02T15:04:05.678Z: last error: refused"},
		{Health{State: Stopped, LastError: errors.New("forbidden"), Since: at},
			"Stopped since 2026-01-02T15:04:05.678Z, never synced: last error: forbidden"},
		{Health{State: Stopped, Since: at, HasSynced: true},
			"Stopped since 2026-01-02T15:04:05.678Z, has synced"},
	}
	for _, c := range cases {
		if got := c.h.String(); got != c.want {
			t.Errorf("String() = %q, want %q", got, c.want)
		}
	}
	if got := fmtV(cases[3].h); got != cases[3].want {
		t.Errorf("%%v = %q, want %q", got, cases[3].want)
	}
}

func TestStatsString(t *testing.T) {
	var s Stats
	if got, want := s.String(), `lists=0 watchLists=0 watches=0 watchEnds=0 events=0 dropped=0 listed=0 lastList=0 rv="" lastEvent=never`; got != want {
		t.Errorf("zero Stats: %q, want %q", got, want)
	}
	s = Stats{
		Lists:         map[ListCause]uint64{ListInitial: 1, ListWatchError: 2},
		WatchLists:    map[ListCause]uint64{ListInitial: 1},
		WatchesOpened: 4,
		WatchEnds:     map[WatchEndCause]uint64{WatchEndCause("a"): 1, WatchEndCause("b"): 2},
		Events:        map[watch.EventType]uint64{watch.Added: 100, watch.Modified: 20, EventDropped: 3},
		ItemsListed:   150, LastListItems: 50, LastResourceVersion: "1234",
		LastEvent: time.Unix(1, 0), SinceLastEvent: 1500 * time.Millisecond,
	}
	want := `lists=3 watchLists=1 watches=4 watchEnds=3 events=123 dropped=3 listed=150 lastList=50 rv="1234" lastEvent=1.5s ago`
	if got := fmtV(s); got != want {
		t.Errorf("%%v = %q, want %q", got, want)
	}
	s.IndexerFailures = 2
	want += ` storeRefusals=0 indexerFailures=2`
	if got := fmtV(s); got != want {
		t.Errorf("with indexer failures, %%v = %q, want %q", got, want)
	}
	s.StoreRefusals, s.IndexerFailures = 1, 0
	want = strings.Replace(want, "storeRefusals=0 indexerFailures=2", "storeRefusals=1 indexerFailures=0", 1)
	if got := fmtV(s); got != want {
		t.Errorf("with store refusals, %%v = %q, want %q", got, want)
	}
}

// An informer's health and figures print as one line too: the
// Reflector's, then each handler's, by name, then what gate holds the
// informer back, if one does.
func TestInformerHealthAndStatsString(t *testing.T) {
	at := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	synced := Health{State: Synced, Since: at, HasSynced: true}
	healthCases := []struct {
		h    InformerHealth
		want string
	}{
		{InformerHealth{Reflector: synced, Healthy: true}, "healthy: reflector Synced since 2026-01-02T15:04:05.000Z"},
		{InformerHealth{}, "unhealthy: reflector Syncing"},
		{InformerHealth{Reflector: synced, Handlers: []HandlerProblem{
			{Name: "a.Slow", Reason: HandlerBacklog, Backlog: 2000},
			{Name: "b.Stuck", Reason: HandlerStuck, Backlog: 3, BusyFor: 65*time.Second + 1234*time.Microsecond},
		}}, `unhealthy: reflector Synced since 2026-01-02T15:04:05.000Z; handler "a.Slow" Backlog (2000 waiting); handler "b.Stuck" Stuck (busy for 1m5.001s, 3 waiting)`},
		// A gate's cause (a ring's forbidden Leases) is said, last.
		{InformerHealth{Gate: errors.New("ring not formed: has not read the ring yet; last error: leases is forbidden")},
			"unhealthy: reflector Syncing; held back: ring not formed: has not read the ring yet; last error: leases is forbidden"},
		{InformerHealth{Reflector: synced, Handlers: []HandlerProblem{{Name: "a.Slow", Reason: HandlerBacklog, Backlog: 2000}}, Gate: errors.New("ring not formed")},
			`unhealthy: reflector Synced since 2026-01-02T15:04:05.000Z; handler "a.Slow" Backlog (2000 waiting); held back: ring not formed`},
	}
	for _, c := range healthCases {
		if got := fmtV(c.h); got != c.want {
			t.Errorf("%%v = %q, want %q", got, c.want)
		}
	}
	s := InformerStats{Handlers: []HandlerStats{{
		Name: "a.H", Delivered: 53, Backlog: 1, MaxBacklog: 50, ProcessingTime: 120 * time.Millisecond,
		SlowestCall: 15 * time.Millisecond, BusyFor: 2 * time.Second, Synced: true,
	}}}
	want := `reflector lists=0 watchLists=0 watches=0 watchEnds=0 events=0 dropped=0 listed=0 lastList=0 rv="" lastEvent=never; ` +
		`handler "a.H" delivered=53 backlog=1 maxBacklog=50 processing=120ms slowest=15ms busy=2s synced=true`
	if got := fmtV(s); got != want {
		t.Errorf("%%v = %q, want %q", got, want)
	}
	if got, want := fmtV(InformerStats{}), `reflector lists=0 watchLists=0 watches=0 watchEnds=0 events=0 dropped=0 listed=0 lastList=0 rv="" lastEvent=never`; got != want {
		t.Errorf("%%v of the zero InformerStats = %q, want %q", got, want)
	}
}

func fmtV(v any) string { return fmt.Sprintf("%v", v) }
