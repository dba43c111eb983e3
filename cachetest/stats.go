package cachetest

import "maps"

// Stats counts what a Server has done, for test figures and assertions.
type Stats struct {
	// Calls counts requests by verb, including failed ones.
	Calls map[Verb]int
	// Faults counts injected faults by kind: failed calls, closed, hung
	// and dropped watches, delayed calls, watches closed empty
	// (FaultEmptyWatch) and watch streams ended by an ERROR event (under
	// the kind of the status's Fault).
	Faults map[FaultKind]int
	// Lists counts LISTs served from their first page (no continue token).
	Lists int
	// WatchLists counts WatchList streams started (sendInitialEvents=true).
	WatchLists int
	// Expired counts 410 answers; TooLarge "too large resource version".
	Expired, TooLarge int
	// Events and Bookmarks count watch events delivered to consumers.
	Events, Bookmarks int
	// SlowWatchesClosed counts watches closed because their consumer fell
	// more than Options.WatchBuffer events behind.
	SlowWatchesClosed int
	// EarlyRetries counts calls made before the Retry-After of a 429 the
	// same resource and verb got had passed.
	EarlyRetries int
}

func newStats() Stats {
	return Stats{Calls: map[Verb]int{}, Faults: map[FaultKind]int{}}
}

// Stats returns a copy of the server's counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.stats
	out.Calls = maps.Clone(s.stats.Calls)
	out.Faults = maps.Clone(s.stats.Faults)
	out.Events = int(s.events.Load())
	out.Bookmarks = int(s.bookmarks.Load())
	return out
}
