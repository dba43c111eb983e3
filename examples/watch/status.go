package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/kreflector/cache"
)

// status prints the Reflector's status line: in place on a terminal, as
// one log line per tick otherwise.
type status struct {
	w         io.Writer
	r         *cache.Reflector
	store     cache.Store
	terminal  bool
	lastTick  time.Time
	lastCount uint64
}

func newStatus(w io.Writer, r *cache.Reflector, store cache.Store) *status {
	return &status{w: w, r: r, store: store, terminal: isTerminal(w), lastTick: time.Now()}
}

// tick prints the line with the event rate since the last tick.
func (s *status) tick() { s.print(false) }

// final prints the last line, ending the in-place one on a terminal.
func (s *status) final() { s.print(true) }

func (s *status) print(final bool) {
	st := s.r.Stats()
	events := total(st.Events)
	now := time.Now()
	rate := float64(events-s.lastCount) / now.Sub(s.lastTick).Seconds()
	s.lastCount, s.lastTick = events, now
	h := s.r.Health()
	reason := ""
	if h.Reason != cache.ReasonNone {
		reason = "(" + string(h.Reason) + ")"
	}
	relists := total(st.Lists) + total(st.WatchLists) - st.Lists[cache.ListInitial] - st.WatchLists[cache.ListInitial]
	line := fmt.Sprintf("objects=%d events=%d events/s=%.0f relists=%d health=%s%s lastRV=%s",
		len(s.store.ListKeys()), events, rate, relists, h.State, reason, s.r.LastSyncResourceVersion())
	switch {
	case s.terminal && !final:
		fmt.Fprintf(s.w, "\r\033[K%s", line)
	case s.terminal:
		fmt.Fprintf(s.w, "\r\033[K%s\n", line)
	default:
		fmt.Fprintln(s.w, line)
	}
}

func total[K comparable](m map[K]uint64) uint64 {
	var n uint64
	for _, v := range m {
		n += v
	}
	return n
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
