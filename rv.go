package cache

import (
	"sync"
)

// resumePosition tracks where the Reflector resumes after a watch ends or a
// list fails. The loop goroutine owns every field but published; other
// goroutines read published (LastSyncResourceVersion) under mu.
//
// The position moves forward in exactly one place, advance, and is reset
// by a successful list in one other, synced. Whether the server can serve
// it is set by markUnavailable and cleared by served and synced. Publishing is
// separate and batched (publish), so a burst of watch events costs one lock.
type resumePosition struct {
	// last is the newest resourceVersion the store has been brought to.
	last string
	// dirty says last has moved since it was last published.
	dirty bool
	// unavailable is set when the server answered that last is expired or
	// too large; the next list or WatchList then asks for RV "" (a
	// consistent read) instead.
	unavailable bool

	mu        sync.RWMutex
	published string
}

// advance records rv as the newest resourceVersion the store has seen. An
// empty rv (an object without one, which no conforming server sends) is
// ignored: resuming from "" would restart the watch from the current state
// and never deliver the deletions in between.
func (p *resumePosition) advance(rv string) {
	if rv == "" {
		return
	}
	p.last = rv
	p.dirty = true
}

// publish makes the newest resourceVersion visible to snapshot.
func (p *resumePosition) publish() {
	if !p.dirty {
		return
	}
	p.dirty = false
	p.mu.Lock()
	p.published = p.last
	p.mu.Unlock()
}

// markUnavailable records that the server no longer (or not yet) serves
// the last resourceVersion.
func (p *resumePosition) markUnavailable() { p.unavailable = true }

// served records that the server answered a LIST or WatchList asked for
// at listRV or watchListRV: the last resourceVersion is no longer known to
// be unavailable. As in client-go, this holds even if the store then
// refuses the result, so the next attempt asks for last again.
func (p *resumePosition) served() { p.unavailable = false }

// synced records a successful list or WatchList at rv.
// The position is set to rv, whatever it was: a list defines the state.
func (p *resumePosition) synced(rv string) {
	p.unavailable = false
	p.last, p.dirty = rv, true
	p.publish()
}

// listRV is the resourceVersion for the next LIST: "0" before anything is
// known (any cached state will do), "" after the last one became
// unavailable, and the last one otherwise (data at least that fresh).
func (p *resumePosition) listRV() string {
	switch {
	case p.unavailable:
		return ""
	case p.last == "":
		return "0"
	default:
		return p.last
	}
}

// watchListRV is the resourceVersion a WatchList stream starts from: the
// last one, or "" (most recent, consistent) when it is unknown or unavailable.
func (p *resumePosition) watchListRV() string {
	if p.unavailable {
		return ""
	}
	return p.last
}

// watchRV is the resourceVersion a plain WATCH resumes from.
func (p *resumePosition) watchRV() string { return p.last }

// snapshot returns the published resourceVersion; safe from any goroutine.
func (p *resumePosition) snapshot() string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.published
}

// defaultStaleRVThreshold is how many watches in a row may end on an
// unusable resourceVersion (expired, too large, or closed at once) at the
// same RV before the Reflector stops trusting that RV and relists with a
// consistent read (RV "").
const defaultStaleRVThreshold = 3

// staleStreak counts consecutive watches that failed at one resourceVersion.
// The loop goroutine owns it.
type staleStreak struct {
	rv    string
	count int
}

// observeWatchEnd records whether a watch that started at rv ended on an
// unusable resourceVersion (stale: classify's streakCount) and reports whether
// the streak just reached the threshold: the caller then relists at RV "".
func (r *Reflector) observeWatchEnd(rv string, stale bool) bool {
	if r.staleThreshold <= 0 || !stale {
		r.stale = staleStreak{}
		return false
	}
	if r.stale.rv != rv {
		r.stale = staleStreak{rv: rv}
	}
	r.stale.count++
	if r.stale.count < r.staleThreshold {
		return false
	}
	r.stale = staleStreak{}
	return true
}
