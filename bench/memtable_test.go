package bench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
)

// The tables BenchmarkMemorySideBySide prints: Markdown, medians per
// implementation, then the goals of issue 20 checked against them.

const mib = 1 << 20

// memRow is one line of a table: a label and how to read one figure.
type memRow struct {
	label string
	get   func(memResult) float64
	// format renders a median; ratio says the line also shows the ratio
	// to client-go's median.
	format string
	ratio  bool
}

var memRows = []memRow{
	{"heap per Pod after sync", func(r memResult) float64 { return r.HeapPerObject / 1024 }, "%.2f KiB", true},
	{"synced heap", func(r memResult) float64 { return float64(r.SyncedHeap) / mib }, "%.0f MiB", true},
	{"peak during the initial sync", func(r memResult) float64 { return float64(r.SyncPeak) / mib }, "%.0f MiB", true},
	{"peak during a relist after a 410, 5% changed", func(r memResult) float64 { return float64(r.FewChangedPeak) / mib }, "%.0f MiB", true},
	{"… as a multiple of the synced heap", func(r memResult) float64 { return float64(r.FewChangedPeak) / float64(r.SyncedHeap) }, "%.2fx", false},
	{"peak during a relist after a 410, all changed", func(r memResult) float64 { return float64(r.AllChangedPeak) / mib }, "%.0f MiB", true},
	{"… as a multiple of the synced heap", func(r memResult) float64 { return float64(r.AllChangedPeak) / float64(r.SyncedHeap) }, "%.2fx", false},
	{"sync time (GOGC 100)", func(r memResult) float64 { return r.SyncSeconds }, "%.2f s", true},
	{"per watch event (decoded beforehand), wall", func(r memResult) float64 { return r.EventNs }, "%.0f ns", true},
	{"… CPU", func(r memResult) float64 { return r.EventCPUNs }, "%.0f ns", true},
	{"… allocations per event", func(r memResult) float64 { return r.EventAllocs }, "%.1f", true},
	{"… bytes per event", func(r memResult) float64 { return r.EventBytes }, "%.0f B", true},
	{"per watch event decoded from bytes, wall", func(r memResult) float64 { return r.DecodedEventNs }, "%.0f ns", true},
	{"… CPU", func(r memResult) float64 { return r.DecodedEventCPUNs }, "%.0f ns", true},
}

// printMemTables writes, for each size, the JSON table, the encodings'
// table and the goals.
func printMemTables(w io.Writer, sizes []int, runs int, all map[memKey][]memResult) {
	for _, n := range sizes {
		fmt.Fprintf(w, "\n%d Pods, JSON, medians of %d processes per implementation:\n\n", n, runs)
		printMemTable(w, n, memRows, all)
		fmt.Fprintf(w, "\n%d Pods, the encoding (decoding 20 pages alone; sync time at GOGC 100):\n\n", n)
		printEncodingTable(w, n, all)
		for _, enc := range []string{"json", "protobuf"} {
			fmt.Fprintf(w, "\n%d Pods, %s, times in one process, the implementations in turn, medians of %d rounds:\n\n", n, enc, memSideRounds(n))
			printSideTable(w, sideOf(all, enc, n))
		}
		fmt.Fprintf(w, "\n%d Pods, goals (issue 20):\n\n", n)
		for _, g := range memGoals(n, all) {
			fmt.Fprintln(w, g)
		}
	}
}

// printMemTable prints rows of the JSON runs of n objects: medians, and
// ratios to client-go's where a row asks.
func printMemTable(w io.Writer, n int, rows []memRow, all map[memKey][]memResult) {
	fmt.Fprintf(w, "| |%s|\n|---|%s\n", strings.Join(memImplOrder, "|"), strings.Repeat("---:|", len(memImplOrder)))
	for _, row := range rows {
		cells := []string{row.label}
		base := median(all[memKey{"client-go", "json", n}], row.get)
		for _, impl := range memImplOrder {
			v := median(all[memKey{impl, "json", n}], row.get)
			cell := fmt.Sprintf(row.format, v)
			if row.ratio && impl != "client-go" && base != 0 {
				cell += fmt.Sprintf(" (%.2fx)", v/base)
			}
			cells = append(cells, cell)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
}

func printEncodingTable(w io.Writer, n int, all map[memKey][]memResult) {
	fmt.Fprintln(w, "| | decode per Pod | allocated per Pod | sync time |")
	fmt.Fprintln(w, "|---|---:|---:|---:|")
	for _, impl := range memImplOrder[:2] {
		for _, enc := range []string{"json", "protobuf"} {
			rs := all[memKey{impl, enc, n}]
			fmt.Fprintf(w, "| %s, %s | %.1f µs | %.0f B | %.2f s |\n", impl, enc,
				median(rs, func(r memResult) float64 { return r.DecodeNsPerPod / 1000 }),
				median(rs, func(r memResult) float64 { return r.DecodeBPerPod }),
				median(rs, func(r memResult) float64 { return r.SyncSeconds }))
		}
	}
}

// sideOf is the side-by-side process's figures for enc and n (empty
// if it did not run).
func sideOf(all map[memKey][]memResult, enc string, n int) map[string]*memSideTimes {
	rs := all[memKey{memSideImpl, enc, n}]
	if len(rs) == 0 || rs[0].Side == nil {
		return map[string]*memSideTimes{}
	}
	return rs[0].Side
}

// sideRows are the side-by-side table's lines; a plain one has no
// ratios (a figure about the machine, not the informers).
var sideRows = []struct {
	label, format string
	get           func(*memSideTimes) []float64
	plain         bool
}{
	{"sync time (GOGC 100)", "%.2f s", func(t *memSideTimes) []float64 { return t.SyncSeconds }, false},
	{"per watch event decoded from bytes, wall", "%.0f ns", func(t *memSideTimes) []float64 { return t.EventNs }, false},
	{"… CPU", "%.0f ns", func(t *memSideTimes) []float64 { return t.EventCPUNs }, false},
	{"… allocations per event", "%.1f", func(t *memSideTimes) []float64 { return t.EventAllocs }, false},
	{"… cores other processes took meanwhile", "%.2f", func(t *memSideTimes) []float64 { return t.EventElsewhere }, true},
}

// printSideTable prints medians with each one's ratio to client-go's and,
// for the options, to our default's.
func printSideTable(w io.Writer, side map[string]*memSideTimes) {
	fmt.Fprintf(w, "| |%s|\n|---|%s\n", strings.Join(memImplOrder, "|"), strings.Repeat("---:|", len(memImplOrder)))
	for _, row := range sideRows {
		cells := []string{row.label}
		cg, ours := sideMedian(side, "client-go", row.get), sideMedian(side, "kreflector", row.get)
		for _, impl := range memImplOrder {
			v := sideMedian(side, impl, row.get)
			cell := fmt.Sprintf(row.format, v)
			switch {
			case row.plain:
			case impl == "kreflector" && cg != 0:
				cell += fmt.Sprintf(" (%.3fx client-go's)", v/cg)
			case impl != "client-go" && ours != 0:
				cell += fmt.Sprintf(" (%.3fx ours)", v/ours)
			}
			cells = append(cells, cell)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
}

// sideMedian is the median of impl's figures that get picks (0 if none).
func sideMedian(side map[string]*memSideTimes, impl string, get func(*memSideTimes) []float64) float64 {
	t := side[impl]
	if t == nil {
		return 0
	}
	return middle(slices.Clone(get(t)))
}

// sidePairedRatio is the median, over rounds, of num's figure divided by
// den's in the same round (0 if either has none). Turns of one round run
// minutes apart rather than the whole process apart, so the pairing
// cancels what drifts from round to round on a shared machine.
func sidePairedRatio(side map[string]*memSideTimes, num, den string, get func(*memSideTimes) []float64) float64 {
	if side[num] == nil || side[den] == nil {
		return 0
	}
	a, b := get(side[num]), get(side[den])
	var ratios []float64
	for i := range min(len(a), len(b)) {
		ratios = append(ratios, a[i]/b[i])
	}
	return middle(ratios)
}

// memGoal is one goal: a ratio of medians and its bound.
type memGoal struct {
	what  string
	ratio float64
	bound float64
}

// memGoals checks the goals of issue 20: heap figures from the processes
// of one implementation each, time figures from the side-by-side process
// on JSON (the benchmark's encoding), with protobuf's beside them.
func memGoals(n int, all map[memKey][]memResult) []string {
	cg, kr := memKey{"client-go", "json", n}, memKey{"kreflector", "json", n}
	share, lean := memKey{"kreflector+share", "json", n}, memKey{"kreflector+lean", "json", n}
	of := func(k memKey, get func(memResult) float64) float64 { return median(all[k], get) }
	heap := func(r memResult) float64 { return r.HeapPerObject }
	synced := func(r memResult) float64 { return float64(r.SyncedHeap) }
	fewPeak := func(r memResult) float64 { return float64(r.FewChangedPeak) }
	allPeak := func(r memResult) float64 { return float64(r.AllChangedPeak) }
	syncPeak := func(r memResult) float64 { return float64(r.SyncPeak) }
	sync := func(t *memSideTimes) []float64 { return t.SyncSeconds }
	cpu := func(t *memSideTimes) []float64 { return t.EventCPUNs }
	wall := func(t *memSideTimes) []float64 { return t.EventNs }
	side := func(enc, num, den string, get func(*memSideTimes) []float64) float64 {
		s := sideOf(all, enc, n)
		return sideMedian(s, num, get) / sideMedian(s, den, get)
	}
	paired := func(enc, num, den string, get func(*memSideTimes) []float64) float64 {
		return sidePairedRatio(sideOf(all, enc, n), num, den, get)
	}
	goals := []memGoal{
		{"default: relist peak (5% changed) / synced heap", of(kr, fewPeak) / of(kr, synced), 1.25},
		{"default: relist peak (all changed) / client-go's", of(kr, allPeak) / of(cg, allPeak), 1},
		{"default: heap per object / client-go's", of(kr, heap) / of(cg, heap), 1.02},
		{"default: sync time / client-go's (one process, in turn)", side("json", "kreflector", "client-go", sync), 1.05},
		{"ShareStrings: heap per object / client-go's", of(share, heap) / of(cg, heap), 0.78},
		{"lean (ShareStrings+ShareMaps+DropManagedFields): heap per object / client-go's", of(lean, heap) / of(cg, heap), 0.65},
		{"lean: initial-sync peak / client-go's", of(lean, syncPeak) / of(cg, syncPeak), 0.75},
		{"ShareStrings: ns per watch event decoded from bytes / our default's (one process, in turn)", side("json", "kreflector+share", "kreflector", wall), 1.15},
		{"(beside the goal) the same in CPU time", side("json", "kreflector+share", "kreflector", cpu), 1.15},
		{"(beside the goal) the same, paired: median of each round's ratio, ns", paired("json", "kreflector+share", "kreflector", wall), 1.15},
		{"(beside the goal) the same from protobuf, ns", side("protobuf", "kreflector+share", "kreflector", wall), 1.15},
		{"(beside the goal) the same from protobuf, CPU", side("protobuf", "kreflector+share", "kreflector", cpu), 1.15},
		{"(beside the goal) the same from protobuf, paired, ns", paired("protobuf", "kreflector+share", "kreflector", wall), 1.15},
		{"(not a goal) ShareStrings: CPU per watch event decoded beforehand / our default's", of(share, func(r memResult) float64 { return r.EventCPUNs }) / of(kr, func(r memResult) float64 { return r.EventCPUNs }), 1.15},
	}
	var out []string
	for _, g := range goals {
		verdict := "met"
		if !(g.ratio <= g.bound) {
			verdict = "NOT met"
		}
		out = append(out, fmt.Sprintf("- %s: %.3f (goal ≤ %.2f): %s", g.what, g.ratio, g.bound, verdict))
	}
	return out
}

// A paired ratio compares turns of the same round: here the first round
// ran slow for both (a busy neighbour), which pulls the ratio of medians
// to 0.6 but leaves the rounds' own ratios (1.1, 1.1, 0.6) alone. Rounds
// one side lacks are left out, and no figures give 0.
func TestSidePairedRatio(t *testing.T) {
	wall := func(s *memSideTimes) []float64 { return s.EventNs }
	side := map[string]*memSideTimes{
		"a": {EventNs: []float64{330, 110, 120, 999}},
		"b": {EventNs: []float64{300, 100, 200}},
	}
	if got := sidePairedRatio(side, "a", "b", wall); math.Abs(got-1.1) > 1e-9 {
		t.Errorf("paired ratio %v, want 1.1 (the rounds' ratios are 1.1, 1.1, 0.6)", got)
	}
	if got := sideMedian(side, "a", wall) / sideMedian(side, "b", wall); math.Abs(got-1.1) < 0.1 {
		t.Errorf("the ratio of medians is also 1.1: the case does not tell pairing apart")
	}
	if got := sidePairedRatio(side, "a", "missing", wall); got != 0 {
		t.Errorf("paired ratio with no figures %v, want 0", got)
	}
}
