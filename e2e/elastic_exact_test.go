//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"
)

// quietMargin: writes acknowledged this close to a run's quiesce are left
// out of the unhandled count (their calls may still be on their way).
const quietMargin = 2 * time.Second

// handlerCall is one handler call of one replica process, from its log.
type handlerCall struct {
	t          time.Time
	proc       int
	event      string
	uid, name  string
	rv         int64
	seq        int // its place in the process's log
	outOfOrder bool
	// behind: an older state than another replica handled before, or
	// anything but a delete after another replica handled the delete;
	// redelete: a delete another replica had handled already.
	behind, redelete bool
}

// serverObject is one object of the LIST taken at quiesce.
type serverObject struct {
	name string
	rv   int64
}

// lastState compares, at quiesce, the last state handled of each object
// (by any replica; the latest call by wall clock) with the server's.
type lastState struct {
	objects, deleted int
	// stale: the last call's resourceVersion differs from the server's;
	// missing: no call at all; undeleted: the object was deleted and the
	// last call was not a delete.
	stale, missing, undeleted int
	examples                  []string
}

func (l lastState) mismatches() int { return l.stale + l.missing + l.undeleted }

// exactFigures is what comparing every handler call of a run with every
// write of the churn shows; the per-step slices are indexed as stepOf.
type exactFigures struct {
	steps                   []string
	writes, deletes         []int
	unhandled, unhandledDel []int
	outOfOrder, behind      []int
	redeletes               int
	calls, excluded         int
	// deleteCalls counts the delete calls; olderDeletes those carrying a
	// state older than the deletion (a delete noticed by a relist).
	deleteCalls, olderDeletes int
	// onResume counts the calls a stopped process made between SIGCONT
	// and its fence, when it no longer owned anything.
	onResume int
	last     lastState
	// examples are the first few cases of each kind.
	examples []string
	shown    map[string]int
}

func total(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// stepOf is the index of the step in progress at t: 0 before the first
// change, i after the i-th.
func (r *ringRun) stepOf(t time.Time) int {
	i := 0
	for k, c := range r.changes {
		if !c.at.After(t) {
			i = k + 1
		}
	}
	return i
}

// handlerCalls reads every call of r's processes, each process's in its
// log's order.
func (r *ringRun) handlerCalls(t *testing.T) []handlerCall {
	var out []handlerCall
	for pi, p := range r.f.procs {
		if err := p.read(); err != nil {
			t.Fatal(err)
		}
		for i, rec := range p.recs {
			if rec.Kind != "call" {
				continue
			}
			rv, err := strconv.ParseInt(rec.RV, 10, 64)
			if err != nil {
				t.Fatalf("%s logged a call with resourceVersion %q", p.id, rec.RV)
			}
			out = append(out, handlerCall{t: rec.at(), proc: pi, event: rec.Event, uid: rec.UID, name: rec.Name, rv: rv, seq: i})
		}
	}
	return out
}

// exact compares r's handler calls with writes, the churn's whole log;
// deletedAt is each deletion's resourceVersion by uid (the test's watch).
func (r *ringRun) exact(t *testing.T, writes []churnWrite, deletedAt map[string]int64) exactFigures {
	n := len(r.changes) + 1
	ex := exactFigures{steps: []string{"start"}, writes: make([]int, n), deletes: make([]int, n), unhandled: make([]int, n),
		unhandledDel: make([]int, n), outOfOrder: make([]int, n), behind: make([]int, n)}
	for _, c := range r.changes {
		ex.steps = append(ex.steps, c.label)
	}
	calls := r.handlerCalls(t)
	ex.calls = len(calls)
	markOrder(calls)
	for _, c := range calls {
		s := r.stepOf(c.t)
		if c.outOfOrder {
			ex.outOfOrder[s]++
			ex.example("order", fmt.Sprintf("out of order in %s: %s %s rv %d at %.3f s (%s)", r.f.procs[c.proc].id, c.event, c.name, c.rv, c.t.Sub(r.start).Seconds(), ex.steps[s]))
		}
		if c.behind {
			ex.behind[s]++
			ex.example("behind", fmt.Sprintf("behind another replica in %s: %s %s rv %d at %.3f s (%s)", r.f.procs[c.proc].id, c.event, c.name, c.rv, c.t.Sub(r.start).Seconds(), ex.steps[s]))
		}
		if c.redelete {
			ex.redeletes++
		}
		if c.event == "delete" {
			ex.deleteCalls++
			if rv, ok := deletedAt[c.uid]; ok && c.rv < rv {
				ex.olderDeletes++
			}
		}
	}
	ex.onResume = r.callsOnResume(calls)
	r.countUnhandled(&ex, writes, calls)
	ex.last = r.lastState(writes, calls)
	return ex
}

func (ex *exactFigures) example(kind, s string) {
	if ex.shown == nil {
		ex.shown = map[string]int{}
	}
	if ex.shown[kind] < 4 {
		ex.shown[kind]++
		ex.examples = append(ex.examples, s)
	}
}

// markOrder marks the calls out of order within their process (a
// resourceVersion lower than one that process handled before for the
// object, or anything after its delete) and those behind, or repeating
// the delete of, what another replica handled earlier.
func markOrder(calls []handlerCall) {
	byUID := map[string][]int{}
	for i, c := range calls {
		byUID[c.uid] = append(byUID[c.uid], i)
	}
	for _, idx := range byUID {
		slices.SortStableFunc(idx, func(a, b int) int { return calls[a].t.Compare(calls[b].t) })
		best := map[int]int64{}   // per process, the highest rv handled
		deleted := map[int]bool{} // per process, the delete handled
		for _, i := range idx {
			c := &calls[i]
			isDelete := c.event == "delete"
			for p, rv := range best {
				switch {
				case p == c.proc:
				case deleted[p] && isDelete:
					c.redelete = true
				case rv > c.rv || deleted[p]:
					c.behind = true
				}
			}
			if rv, ok := best[c.proc]; ok && (rv > c.rv || deleted[c.proc]) {
				c.outOfOrder = true
			}
			best[c.proc] = max(best[c.proc], c.rv)
			deleted[c.proc] = deleted[c.proc] || isDelete
		}
	}
}

// countUnhandled counts the writes of the run (from its first formation
// to quietMargin before its quiesce) that no call handled: a create or
// patch is handled by a call for its uid at its resourceVersion or later,
// a delete only by a delete call for its uid.
func (r *ringRun) countUnhandled(ex *exactFigures, writes []churnWrite, calls []handlerCall) {
	highest, deleted := map[string]int64{}, map[string]bool{}
	for _, c := range calls {
		highest[c.uid] = max(highest[c.uid], c.rv)
		deleted[c.uid] = deleted[c.uid] || c.event == "delete"
	}
	for _, w := range writes {
		if w.at.Before(r.start) || w.at.After(r.end) {
			continue
		}
		if w.at.After(r.end.Add(-quietMargin)) {
			ex.excluded++
			continue
		}
		s := r.stepOf(w.at)
		if w.op == opDelete {
			ex.deletes[s]++
			if !deleted[w.uid] {
				ex.unhandledDel[s]++
				ex.example("delete", fmt.Sprintf("delete of %s at %.3f s (%s) never handled", w.name, w.at.Sub(r.start).Seconds(), ex.steps[s]))
			}
			continue
		}
		ex.writes[s]++
		if h, ok := highest[w.uid]; !ok || h < w.rv {
			ex.unhandled[s]++
			ex.example("write", fmt.Sprintf("%s of %s rv %d at %.3f s (%s) never handled (highest rv handled %d)", w.op, w.name, w.rv, w.at.Sub(r.start).Seconds(), ex.steps[s], h))
		}
	}
}

// lastState compares the last call for each object, among the calls up
// to the quiesce's end, with the LIST taken at quiesce; the objects the
// run saw deleted must have a delete as their last call.
func (r *ringRun) lastState(writes []churnWrite, calls []handlerCall) lastState {
	last := map[string]handlerCall{}
	for _, c := range calls {
		if c.t.After(r.resumed) {
			continue
		}
		if l, ok := last[c.uid]; !ok || c.t.After(l.t) || c.t.Equal(l.t) && c.proc == l.proc && c.seq > l.seq {
			last[c.uid] = c
		}
	}
	var ls lastState
	note := func(s string) {
		if len(ls.examples) < 5 {
			ls.examples = append(ls.examples, s)
		}
	}
	for uid, o := range r.q.server {
		ls.objects++
		switch c, ok := last[uid]; {
		case !ok:
			ls.missing++
			note(fmt.Sprintf("%s (rv %d): never handled", o.name, o.rv))
		case c.rv != o.rv || c.event == "delete":
			ls.stale++
			note(fmt.Sprintf("%s: server rv %d, last handled %s rv %d by %s", o.name, o.rv, c.event, c.rv, r.f.procs[c.proc].id))
		}
	}
	for _, w := range writes {
		if w.op != opDelete || w.at.Before(r.start) || w.at.After(r.resumed) {
			continue
		}
		ls.deleted++
		switch c, ok := last[w.uid]; {
		case !ok:
			ls.undeleted++
			note(fmt.Sprintf("%s deleted at %.3f s: never handled", w.name, w.at.Sub(r.start).Seconds()))
		case c.event != "delete":
			ls.undeleted++
			note(fmt.Sprintf("%s deleted at %.3f s: last call %s rv %d by %s", w.name, w.at.Sub(r.start).Seconds(), c.event, c.rv, r.f.procs[c.proc].id))
		}
	}
	return ls
}

// deletionRVs returns each deletion's resourceVersion by uid, from the
// test's watch.
func deletionRVs(events []refEvent) map[string]int64 {
	out := map[string]int64{}
	for _, e := range events {
		if e.typ == watch.Deleted {
			out[e.uid] = e.rv
		}
	}
	return out
}

// logVsWatch holds the write log to the test's watch: every event the
// server sent must be a logged write (an ADDED or MODIFIED by uid and
// resourceVersion, a DELETED by uid), and every logged write an event.
func logVsWatch(writes []churnWrite, events []refEvent) (unlogged, unseen int) {
	type key struct {
		uid string
		rv  int64
	}
	logged := map[key]bool{}
	for _, w := range writes {
		logged[key{w.uid, w.rv}] = true
	}
	seen := map[key]bool{}
	for _, e := range events {
		k := key{e.uid, e.rv}
		if e.typ == watch.Deleted {
			k.rv = 0
		}
		seen[k] = true
		if !logged[k] {
			unlogged++
		}
	}
	for k := range logged {
		if !seen[k] {
			unseen++
		}
	}
	return unlogged, unseen
}
