//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// figureRow is one run's line of the table.
func figureRow(r *ringRun, fg figures) string {
	var doubles, unowned, moves []string
	for _, c := range causes {
		if _, ok := r.causeSeen(c); !ok {
			doubles, unowned = append(doubles, "–"), append(unowned, "–")
			continue
		}
		doubles = append(doubles, fmt.Sprint(fg.doubles[c]))
		unowned = append(unowned, seconds2(fg.unowned[c]))
	}
	for i, m := range r.moves {
		moves = append(moves, fmt.Sprintf("%s %.3f/%.3f (%.2f×)", m.label, fg.moved[i], m.ideal, fg.moved[i]/m.ideal))
	}
	closest := "–"
	if fg.closestCalls >= 0 {
		closest = fg.closestCalls.Round(time.Millisecond).String()
	}
	shares := make([]string, len(r.q.shares))
	for i, s := range r.q.shares {
		shares[i] = fmt.Sprintf("%.3f", s)
	}
	union := fmt.Sprintf("= LIST (%d)", r.q.listed)
	if !r.q.equal() {
		union = fmt.Sprintf("≠ LIST (%d): %d lost, %d stale, %d extra", r.q.listed, r.q.lost, r.q.stale, r.q.extra)
	}
	if r.q.dup > 0 {
		union += fmt.Sprintf(", %d in 2+ caches", r.q.dup)
	}
	return fmt.Sprintf("| %s | %s | %s (longest %s) | %d of %d calls (closest %s) | %s | %s | %s | %s (1/n = %.3f) | %s |",
		r.name, r.settings, strings.Join(doubles, " / "), fg.longestDouble.Round(time.Millisecond), fg.callDoubles, fg.calls, closest,
		strings.Join(unowned, " / "), strings.Join(moves, "; "), union, strings.Join(shares, " / "), 1/float64(len(r.q.shares)),
		r.wall.Round(time.Second))
}

// causeSeen says whether r made a change of cause c.
func (r *ringRun) causeSeen(c string) (change, bool) {
	for _, ch := range r.changes {
		if ch.cause == c {
			return ch, true
		}
	}
	return change{}, false
}

func seconds2(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

const figureHeader = "| run | lease / renew / retry | objects double-handled (intervals): graceful / SIGKILL / black-hole / SIGSTOP | objects with calls of 2 replicas < 100 ms apart | longest unowned: graceful / SIGKILL / black-hole / SIGSTOP | objects moved per change vs ideal | union of caches at quiesce | share per replica | wall |\n" +
	"|---|---|---|---|---|---|---|---|---|"

// checkGoals asserts the goals of the elastic ring on r, each replica's
// share of the objects included if withShares is set.
func checkGoals(t *testing.T, r *ringRun, fg figures, withShares bool) {
	t.Helper()
	for _, c := range causes {
		if fg.doubles[c] > 0 {
			t.Errorf("%s: %d objects handled by two replicas at once after a %s change (longest %v)", r.name, fg.doubles[c], c, fg.longestDouble)
		}
	}
	if fg.callDoubles > 0 {
		t.Errorf("%s: %d objects had handler calls of two replicas less than %v apart", r.name, fg.callDoubles, callWindow)
	}
	if d := fg.unowned[causeGraceful]; d > 5*time.Second {
		t.Errorf("%s: an object went %v without a handling replica after a graceful change, want ≤ 5 s", r.name, d)
	}
	for _, c := range []string{causeKill, causeBlackHole, causeStop} {
		if d := fg.unowned[c]; d > r.lease+5*time.Second {
			t.Errorf("%s: an object went %v without a handling replica after a %s, want ≤ %v", r.name, d, c, r.lease+5*time.Second)
		}
	}
	for i, m := range r.moves {
		if fg.moved[i] > 1.25*m.ideal {
			t.Errorf("%s: %s moved %.3f of the objects, more than 1.25 × the ideal %.3f", r.name, m.label, fg.moved[i], m.ideal)
		}
	}
	if fg.orphans > 0 {
		t.Errorf("%s: %d object-instants of steady state had no single owner", r.name, fg.orphans)
	}
	if !r.q.equal() || r.q.dup > 0 {
		t.Errorf("%s: at quiesce the caches' union differs from the LIST of %d: %d lost, %d stale, %d extra, %d in two caches", r.name, r.q.listed, r.q.lost, r.q.stale, r.q.extra, r.q.dup)
	}
	for i, s := range r.q.shares {
		if !withShares {
			break
		}
		if want := 1 / float64(len(r.q.shares)); math.Abs(s-want) > 0.05 {
			t.Errorf("%s: replica %d caches %.3f of the objects, want %.3f ± 0.05", r.name, i, s, want)
		}
	}
}

// reportExact compares each run's handler calls with writes, the churn's
// log, after holding the log to ref, the test's own watch; it prints the
// second table, the gated run's steps, and keeps the write log with the
// replicas' logs if asked to.
func reportExact(t *testing.T, runs []*ringRun, writes []churnWrite, ref *refWatch) []exactFigures {
	t.Helper()
	events := ref.stop()
	unlogged, unseen := logVsWatch(writes, events)
	deleted := deletionRVs(events)
	rows := []string{exactHeader}
	var out []exactFigures
	for _, r := range runs {
		ex := r.exact(t, writes, deleted)
		out = append(out, ex)
		rows = append(rows, exactRow(r, ex))
	}
	t.Logf("every handler call against every write: %d writes logged, %d events of the test's watch (%d not in the log, %d writes not seen, %d watch errors):\n%s",
		len(writes), len(events), unlogged, unseen, ref.errs, strings.Join(rows, "\n"))
	t.Logf("%s, per step:\n%s", runs[0].name, exactSteps(out[0]))
	for i, ex := range out {
		if len(ex.examples)+len(ex.last.examples) > 0 {
			t.Logf("%s, first cases: %s", runs[i].name, strings.Join(append(ex.examples, ex.last.examples...), "; "))
		}
	}
	if unlogged+unseen > 0 {
		t.Errorf("the write log and the test's watch differ: %d events not in the log, %d writes not seen", unlogged, unseen)
	}
	keepWrites(t, writes, deleted)
	return out
}

// keepWrites writes the write log, one JSON object a line, beside the
// replicas' logs when keepLogsEnv asks to keep them.
func keepWrites(t *testing.T, writes []churnWrite, deleted map[string]int64) {
	dir := os.Getenv(keepLogsEnv)
	if dir == "" {
		return
	}
	type line struct {
		T    int64  `json:"t"`
		Op   string `json:"op"`
		Name string `json:"name"`
		UID  string `json:"uid"`
		RV   int64  `json:"rv"`
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, w := range writes {
		rv := w.rv
		if w.op == opDelete {
			rv = deleted[w.uid]
		}
		if err := enc.Encode(line{T: w.at.UnixNano(), Op: w.op, Name: w.name, UID: w.uid, RV: rv}); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "writes.log"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("the write log is kept in %s", filepath.Join(dir, "writes.log"))
}

// exactHeader and exactRow: the second table, one row per run.
const exactHeader = "| run | handler calls | out of order (per replica) | behind another replica's earlier call; deletes repeated by another replica | writes never handled: creates+patches / deletes | last handled state ≠ server at quiesce (stale / never handled / delete not last) | replicas back after each fault |\n" +
	"|---|---|---|---|---|---|---|"

func exactRow(r *ringRun, ex exactFigures) string {
	var back []string
	for _, f := range r.faults {
		back = append(back, f.String())
	}
	if len(back) == 0 {
		back = []string{"–"}
	}
	if r.paused() {
		back = append(back, fmt.Sprintf("%d calls between SIGCONT and the fence", ex.onResume))
	}
	return fmt.Sprintf("| %s | %d (%d deletes, %d with an older state) | %d | %d; %d | %d of %d / %d of %d (%d in the last %v left out) | %d / %d / %d of %d objects and %d deleted | %s |",
		r.name, ex.calls, ex.deleteCalls, ex.olderDeletes, total(ex.outOfOrder), total(ex.behind), ex.redeletes,
		total(ex.unhandled), total(ex.writes), total(ex.unhandledDel), total(ex.deletes), ex.excluded, quietMargin,
		ex.last.stale, ex.last.missing, ex.last.undeleted, ex.last.objects, ex.last.deleted, strings.Join(back, "; "))
}

// exactSteps is the per-step breakdown of one run.
func exactSteps(ex exactFigures) string {
	rows := []string{"| step | creates+patches (never handled) | deletes (never handled) | out of order | behind another replica |", "|---|---|---|---|---|"}
	for i, s := range ex.steps {
		rows = append(rows, fmt.Sprintf("| %s | %d (%d) | %d (%d) | %d | %d |", s, ex.writes[i], ex.unhandled[i], ex.deletes[i], ex.unhandledDel[i], ex.outOfOrder[i], ex.behind[i]))
	}
	return strings.Join(rows, "\n")
}

// checkExact asserts the exactness goals on r.
func checkExact(t *testing.T, r *ringRun, ex exactFigures) {
	t.Helper()
	if n := total(ex.outOfOrder); n > 0 {
		t.Errorf("%s: %d handler calls out of order within a replica", r.name, n)
	}
	if n, d := total(ex.unhandled), total(ex.unhandledDel); n+d > 0 {
		t.Errorf("%s: %d creates and patches and %d deletes never handled", r.name, n, d)
	}
	if n := ex.last.mismatches(); n > 0 {
		t.Errorf("%s: %d objects' last handled state differs from the server's at quiesce: %s", r.name, n, strings.Join(ex.last.examples, "; "))
	}
	if ex.onResume > 0 {
		t.Errorf("%s: %d handler calls of a stopped replica between SIGCONT and its fence", r.name, ex.onResume)
	}
	for _, f := range r.faults {
		if !f.back {
			t.Errorf("%s: %s was not back in the ring within %v of the end of its %s", r.name, f.replica, rejoinWithin, f.label)
		}
	}
}
