package cache

import "time"

// serverFacts is what the Reflector has learned about the server it talks
// to, in one place: each fact changes how later requests are made. The
// loop goroutine owns it.
type serverFacts struct {
	// sendsBookmarks: a watch has delivered a bookmark, so every watch
	// from now on is expected to end by its requested timeout (see
	// stallDetector).
	sendsBookmarks bool
	// pagedAtRV0: the server paged a LIST at RV "0", which means it has
	// no watch cache: later relists keep paging (see pageSizeFor).
	pagedAtRV0 bool
	// watchList: WatchList is to be used (the option, unless the
	// ListerWatcher cannot do it, or the server refused it for good).
	watchList bool
	// watchListMemory is how long a definitive WatchList refusal is
	// remembered: zero for ever, negative not at all.
	watchListMemory time.Duration
	// watchListOffUntil is when a remembered refusal ends.
	watchListOffUntil time.Time
}

// wantsWatchList says whether a cycle starting at now uses WatchList.
func (f *serverFacts) wantsWatchList(now time.Time) bool {
	return f.watchList && !now.Before(f.watchListOffUntil)
}

// watchListRefused is told that the server refused WatchList for good at
// now (see outcome.refusedWatchList): the refusal is remembered for
// watchListMemory.
func (f *serverFacts) watchListRefused(now time.Time) {
	switch {
	case f.watchListMemory < 0:
	case f.watchListMemory == 0:
		f.watchList = false
	default:
		f.watchListOffUntil = now.Add(f.watchListMemory)
	}
}

// sawBookmark is told that a watch delivered a bookmark.
func (f *serverFacts) sawBookmark() { f.sendsBookmarks = true }

// listed is told that a LIST at rv was served, paged or not.
func (f *serverFacts) listed(rv string, paged bool) {
	if rv == "0" && paged {
		f.pagedAtRV0 = true
	}
}
