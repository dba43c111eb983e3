//go:build e2e

package e2e

import (
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/kreflector/cache/shard"
)

// Causes a change is put under, for the unowned and double-handled
// figures.
const (
	causeGraceful  = "graceful"
	causeKill      = "SIGKILL"
	causeBlackHole = "black-hole"
	causeStop      = "SIGSTOP"
)

var causes = []string{causeGraceful, causeKill, causeBlackHole, causeStop}

// callWindow is the "same instant" of the handler-call check: two
// replicas' calls for one object closer than this count as handled by
// both at once. A handoff takes at least a Lease write and two reads.
const callWindow = 100 * time.Millisecond

// change is one thing a run did to its replicas, at a time on the
// machine's wall clock.
type change struct {
	at    time.Time
	label string
	cause string
}

// move compares the owner of every object at two instants of steady
// state, before and after a membership change.
type move struct {
	label         string
	before, after time.Time
	ideal         float64
}

// ringRun is one run: its replicas' logs, what was done to them and when,
// and the quiesce check.
type ringRun struct {
	name, settings string
	lease          time.Duration
	f              *fleet
	// start is when the first formation completed: unowned time is
	// counted from then to end, the start of the quiesce.
	start, end time.Time
	changes    []change
	moves      []move
	pending    *move
	q          quiesceResult
	// resumed is when the quiesce ended and the churn went on.
	resumed time.Time
	// faults: the replicas cut off by a pause or a black-hole.
	faults []faultResult
	wall   time.Duration
}

// step records a change now; a non-negative ideal also starts a move
// (closing the one in progress) whose after-instant is the next move's
// start or the run's end.
func (r *ringRun) step(label, cause string, ideal float64) time.Time {
	now := time.Now()
	r.changes = append(r.changes, change{at: now, label: label, cause: cause})
	if ideal >= 0 {
		r.closeMove(now)
		r.pending = &move{label: label, before: now.Add(-time.Millisecond), ideal: ideal}
	}
	return now
}

func (r *ringRun) closeMove(now time.Time) {
	if r.pending != nil {
		r.pending.after = now.Add(-time.Millisecond)
		r.moves = append(r.moves, *r.pending)
		r.pending = nil
	}
}

// quiesceResult compares the union of the replicas' caches, with the
// churn paused, with a consistent LIST.
type quiesceResult struct {
	listed, lost, stale, extra, dup int
	shares                          []float64
	tries                           int
	// server is the LIST's objects by uid.
	server map[string]serverObject
}

func (q quiesceResult) equal() bool { return q.lost == 0 && q.stale == 0 && q.extra == 0 }

// baseObject is one of the ConfigMaps that live through the whole test.
type baseObject struct {
	name string
	uid  string
	hash uint64
}

// interval is a stretch of time a replica process handled an object.
type interval struct {
	from, to time.Time
	proc     int
}

// shardCache parses each selector once.
type shardCache map[string]shard.Shard

func (c shardCache) get(t *testing.T, sel string) shard.Shard {
	s, ok := c[sel]
	if !ok {
		var err error
		if s, err = shard.Parse(sel); err != nil {
			t.Fatalf("a replica logged the selector %q: %v", sel, err)
		}
		c[sel] = s
	}
	return s
}

// intervals returns, per object, the handling intervals of every process
// of r, from their open and close records. A process SIGKILLed stopped
// handling when it was killed; one still running at the end of the log
// handles to the end of time.
func (r *ringRun) intervals(t *testing.T, objs []baseObject) [][]interval {
	out := make([][]interval, len(objs))
	shards := shardCache{}
	forever := time.Unix(1<<40, 0)
	for pi, p := range r.f.procs {
		if err := p.read(); err != nil {
			t.Fatal(err)
		}
		open := make([]time.Time, len(objs))
		for _, rec := range p.recs {
			if rec.Kind != "open" && rec.Kind != "close" {
				continue
			}
			s := shards.get(t, rec.Shard)
			for oi, o := range objs {
				if !s.ContainsHash(o.hash) {
					continue
				}
				switch {
				case rec.Kind == "open" && open[oi].IsZero():
					open[oi] = rec.at()
				case rec.Kind == "close" && !open[oi].IsZero():
					out[oi] = append(out[oi], interval{from: open[oi], to: rec.at(), proc: pi})
					open[oi] = time.Time{}
				}
			}
		}
		end := forever
		if p.killed {
			end = p.stopped
		}
		stopped := p.stoppedSpans()
		for oi := range objs {
			if !open[oi].IsZero() {
				out[oi] = append(out[oi], interval{from: open[oi], to: end, proc: pi})
			}
			out[oi] = unpaused(out[oi], pi, stopped)
		}
	}
	for _, iv := range out {
		slices.SortFunc(iv, func(a, b interval) int { return a.from.Compare(b.from) })
	}
	return out
}

// unpaused cuts the spans process pi was stopped out of its intervals in
// ivs: a stopped process handles nothing (see stoppedSpans).
func unpaused(ivs []interval, pi int, pauses []pauseSpan) []interval {
	for _, ps := range pauses {
		var out []interval
		for _, x := range ivs {
			if x.proc != pi || !x.from.Before(ps.to) || !ps.from.Before(x.to) {
				out = append(out, x)
				continue
			}
			if x.from.Before(ps.from) {
				out = append(out, interval{from: x.from, to: ps.from, proc: pi})
			}
			if ps.to.Before(x.to) {
				out = append(out, interval{from: ps.to, to: x.to, proc: pi})
			}
		}
		ivs = out
	}
	return ivs
}

// causeAt is the cause of the last change at or before t ("start" before
// the first).
func (r *ringRun) causeAt(t time.Time) string {
	c := "start"
	for _, ch := range r.changes {
		if !ch.at.After(t) {
			c = ch.cause
		}
	}
	return c
}

// figures is what a run's logs show.
type figures struct {
	// doubles counts the objects two processes handled at one instant,
	// by the cause of the change before; longestDouble is the longest
	// such overlap.
	doubles       map[string]int
	longestDouble time.Duration
	// callDoubles counts objects with handler calls of two processes
	// closer than callWindow; closestCalls is the closest such pair.
	callDoubles  int
	closestCalls time.Duration
	calls        int
	// unowned is the longest time an object had no handling process
	// after a change of each cause.
	unowned map[string]time.Duration
	// moved is, per move, the share of objects whose owner changed.
	moved []float64
	// orphans counts objects with no single owner at a move's instants.
	orphans int
}

func (r *ringRun) figures(t *testing.T, objs []baseObject) figures {
	fg := figures{doubles: map[string]int{}, unowned: map[string]time.Duration{}, closestCalls: -1}
	ivs := r.intervals(t, objs)
	for _, iv := range ivs {
		seen := map[string]bool{}
		for i := range iv {
			for j := i + 1; j < len(iv); j++ {
				a, b := iv[i], iv[j]
				if a.proc == b.proc {
					continue
				}
				from, to := maxTime(a.from, b.from), minTime(a.to, b.to)
				if to.After(from) {
					c := r.causeAt(from)
					if !seen[c] {
						seen[c] = true
						fg.doubles[c]++
					}
					fg.longestDouble = max(fg.longestDouble, to.Sub(from))
				}
			}
		}
		// Unowned stretches between start and end.
		covered := r.start
		for _, x := range iv {
			if x.from.After(covered) && covered.Before(r.end) {
				gapEnd := minTime(x.from, r.end)
				c := r.causeAt(covered)
				fg.unowned[c] = max(fg.unowned[c], gapEnd.Sub(covered))
			}
			covered = maxTime(covered, x.to)
		}
		if covered.Before(r.end) {
			c := r.causeAt(covered)
			fg.unowned[c] = max(fg.unowned[c], r.end.Sub(covered))
		}
	}
	for _, m := range r.moves {
		moved := 0
		for _, iv := range ivs {
			a, b := r.ownerAt(iv, m.before), r.ownerAt(iv, m.after)
			if a == "" || b == "" {
				fg.orphans++
			}
			if a != b {
				moved++
			}
		}
		fg.moved = append(fg.moved, float64(moved)/float64(len(objs)))
	}
	r.callFigures(&fg)
	return fg
}

// ownerAt is the owner of the one process handling the object at t, or
// "" if none or several do.
func (r *ringRun) ownerAt(iv []interval, t time.Time) string {
	owner, n := "", 0
	for _, x := range iv {
		if !x.from.After(t) && x.to.After(t) {
			owner = r.f.procs[x.proc].owner
			n++
		}
	}
	if n != 1 {
		return ""
	}
	return owner
}

// callFigures finds, per object, handler calls of two processes closer
// than callWindow.
func (r *ringRun) callFigures(fg *figures) {
	type call struct {
		t    int64
		proc int
	}
	byUID := map[string][]call{}
	for pi, p := range r.f.procs {
		for _, rec := range p.recs {
			if rec.Kind == "call" {
				byUID[rec.UID] = append(byUID[rec.UID], call{rec.T, pi})
				fg.calls++
			}
		}
	}
	for _, cs := range byUID {
		sort.Slice(cs, func(i, j int) bool { return cs[i].t < cs[j].t })
		double := false
		for i := 1; i < len(cs); i++ {
			if cs[i].proc == cs[i-1].proc {
				continue
			}
			d := time.Duration(cs[i].t - cs[i-1].t)
			if fg.closestCalls < 0 || d < fg.closestCalls {
				fg.closestCalls = d
			}
			if d < callWindow {
				double = true
			}
		}
		if double {
			fg.callDoubles++
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
