package cache

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
