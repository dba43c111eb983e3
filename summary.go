package cache

import (
	"fmt"
	"strings"
	"time"
)

// String is a one-line summary of h: the state, the reason in
// parentheses when Degraded, since when (RFC 3339 in UTC, to the
// millisecond; left out when Since is zero), whether the store was ever
// filled when that is not what the state says (Degraded, Stopped), and
// the last error, if any. For example:
//
//	Degraded(ListFailing) since 2026-01-02T15:04:05.000Z, never synced: last error: failed to list *v1.Pod: boom
//	Stopped since 2026-01-02T15:05:00.000Z, never synced: last error: pods is forbidden
func (h Health) String() string {
	var b strings.Builder
	b.WriteString(h.State.String())
	if h.Reason != ReasonNone {
		fmt.Fprintf(&b, "(%s)", h.Reason)
	}
	if !h.Since.IsZero() {
		b.WriteString(" since " + h.Since.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	}
	switch {
	case h.State != Degraded && h.State != Stopped:
	case h.HasSynced:
		b.WriteString(", has synced")
	default:
		b.WriteString(", never synced")
	}
	if h.LastError != nil {
		b.WriteString(": last error: " + h.LastError.Error())
	}
	return b.String()
}

// String is a one-line summary of the figures that tell how a Reflector
// fares: the LISTs, WatchLists, watches opened and ended (each summed over
// causes), the watch events (summed over types) and those dropped, the
// objects listed and in the last sync, the resourceVersion reached, and
// how long ago the last event came ("never" if none), then the store's
// refusals and the indexer's failures if there were any. For example:
//
//	lists=1 watchLists=0 watches=3 watchEnds=2 events=120 dropped=0 listed=50 lastList=50 rv="1234" lastEvent=1.5s ago
//	lists=4 watchLists=0 watches=3 watchEnds=3 events=120 dropped=0 listed=200 lastList=50 rv="1290" lastEvent=2s ago storeRefusals=1 indexerFailures=2
func (s Stats) String() string {
	last := "never"
	if !s.LastEvent.IsZero() {
		last = s.SinceLastEvent.Round(time.Millisecond).String() + " ago"
	}
	line := fmt.Sprintf("lists=%d watchLists=%d watches=%d watchEnds=%d events=%d dropped=%d listed=%d lastList=%d rv=%q lastEvent=%s",
		sum(s.Lists), sum(s.WatchLists), s.WatchesOpened, sum(s.WatchEnds), sum(s.Events), s.Events[EventDropped],
		s.ItemsListed, s.LastListItems, s.LastResourceVersion, last)
	if s.StoreRefusals > 0 || s.IndexerFailures > 0 {
		line += fmt.Sprintf(" storeRefusals=%d indexerFailures=%d", s.StoreRefusals, s.IndexerFailures)
	}
	return line
}

// sum adds up the counts of m.
func sum[K comparable](m map[K]uint64) uint64 {
	var n uint64
	for _, v := range m {
		n += v
	}
	return n
}

// String is a one-line summary of h: whether it is healthy, the
// Reflector's health (see Health.String), each handler outside its
// limits, by name, with what is wrong, and last, when a gate holds the
// informer back, "held back: " and the Gate's error (last, as it may hold
// semicolons of its own: a ring's says why the ring is not formed and its
// last error, such as its Leases forbidden). For example:
//
//	unhealthy: reflector Synced since 2026-01-02T15:04:05.000Z; handler "example.com/ctrl.Handler" Stuck (busy for 1m5s, 12 waiting)
//	unhealthy: reflector Syncing; held back: ring not formed: ring member ctrl-a: 0 members, handling 0 of 0 planned buckets; has not read the ring yet; last error: leases.coordination.k8s.io is forbidden: …
func (h InformerHealth) String() string {
	var b strings.Builder
	if h.Healthy {
		b.WriteString("healthy")
	} else {
		b.WriteString("unhealthy")
	}
	b.WriteString(": reflector " + h.Reflector.String())
	for _, p := range h.Handlers {
		fmt.Fprintf(&b, "; handler %q %s (", p.Name, p.Reason)
		if p.BusyFor > 0 {
			fmt.Fprintf(&b, "busy for %v, ", p.BusyFor.Round(time.Millisecond))
		}
		fmt.Fprintf(&b, "%d waiting)", p.Backlog)
	}
	if h.Gate != nil {
		b.WriteString("; held back: " + h.Gate.Error())
	}
	return b.String()
}

// String is a one-line summary of s: the Reflector's figures (see
// Stats.String), then each handler's, by name: calls made, notifications
// waiting and the most that ever waited, time spent in calls and the
// slowest, how long the call in progress has run, and whether it has
// synced. For example:
//
//	reflector lists=1 watchLists=0 watches=1 watchEnds=0 events=3 dropped=0 listed=50 lastList=50 rv="1234" lastEvent=2s ago; handler "example.com/ctrl.Handler" delivered=53 backlog=0 maxBacklog=50 processing=120ms slowest=15ms busy=0s synced=true
func (s InformerStats) String() string {
	var b strings.Builder
	b.WriteString("reflector " + s.Reflector.String())
	for _, h := range s.Handlers {
		fmt.Fprintf(&b, "; handler %q delivered=%d backlog=%d maxBacklog=%d processing=%v slowest=%v busy=%v synced=%t",
			h.Name, h.Delivered, h.Backlog, h.MaxBacklog, h.ProcessingTime.Round(time.Millisecond),
			h.SlowestCall.Round(time.Millisecond), h.BusyFor.Round(time.Millisecond), h.Synced)
	}
	return b.String()
}
