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

// memEncodingTitles name the encodings in the tables' titles.
var memEncodingTitles = map[string]string{
	"json":         "JSON",
	"protobuf":     "protobuf",
	"unstructured": "unstructured (JSON pages and events decoded as client-go's dynamic client decodes them)",
}

// printMemTables writes, for each size, a table per encoding (its
// implementations that ran), the encodings' table, the side-by-side
// tables and the goals.
func printMemTables(w io.Writer, sizes []int, runs int, all map[memKey][]memResult) {
	for _, n := range sizes {
		for _, e := range memEncodings {
			impls := memColumns(all, e.name, n, e.impls)
			if len(impls) == 0 {
				continue
			}
			fmt.Fprintf(w, "\n%d Pods, %s, medians of %d processes per implementation:\n\n", n, memEncodingTitles[e.name], runs)
			printMemTable(w, n, e.name, impls, memRows, all)
		}
		fmt.Fprintf(w, "\n%d Pods, the encoding (decoding 20 pages alone; sync time at GOGC 100):\n\n", n)
		printEncodingTable(w, n, all)
		for _, enc := range memSideEncodings {
			fmt.Fprintf(w, "\n%d Pods, %s, times in one process, the implementations in turn, medians of %d rounds:\n\n", n, enc, memSideRounds(n))
			printSideTable(w, sideOf(all, enc, n))
		}
		fmt.Fprintf(w, "\n%d Pods, goals (issue 20):\n\n", n)
		for _, g := range memGoals(n, all) {
			fmt.Fprintln(w, g)
		}
	}
}

// memColumns are those of impls that have results for enc and n.
func memColumns(all map[memKey][]memResult, enc string, n int, impls []string) []string {
	var out []string
	for _, impl := range impls {
		if len(all[memKey{impl, enc, n}]) > 0 {
			out = append(out, impl)
		}
	}
	return out
}

// printMemTable prints rows of the runs of n objects in enc, a column
// per implementation of impls: medians, and where a row asks, ratios to
// client-go's in the same encoding (none if client-go's did not run).
func printMemTable(w io.Writer, n int, enc string, impls []string, rows []memRow, all map[memKey][]memResult) {
	fmt.Fprintf(w, "| |%s|\n|---|%s\n", strings.Join(impls, "|"), strings.Repeat("---:|", len(impls)))
	for _, row := range rows {
		cells := []string{row.label}
		base := median(all[memKey{"client-go", enc, n}], row.get)
		for _, impl := range impls {
			v := median(all[memKey{impl, enc, n}], row.get)
			cell := fmt.Sprintf(row.format, v)
			if row.ratio && impl != "client-go" && base != 0 {
				cell += fmt.Sprintf(" (%.2fx)", v/base)
			}
			cells = append(cells, cell)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
}

// printEncodingTable prints, for each implementation that runs in every
// encoding, one line per encoding it ran in.
func printEncodingTable(w io.Writer, n int, all map[memKey][]memResult) {
	fmt.Fprintln(w, "| | decode per Pod | allocated per Pod | sync time |")
	fmt.Fprintln(w, "|---|---:|---:|---:|")
	for _, impl := range memCompactRows {
		for _, e := range memEncodings {
			rs := all[memKey{impl, e.name, n}]
			if len(rs) == 0 {
				continue
			}
			fmt.Fprintf(w, "| %s, %s | %.1f µs | %.0f B | %.2f s |\n", impl, e.name,
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

// printSideTable prints, for each implementation that took turns,
// medians with each one's ratio to client-go's and, for the options, to
// our default's (to client-go's if ours did not take turns).
func printSideTable(w io.Writer, side map[string]*memSideTimes) {
	var impls []string
	for _, impl := range memImplOrder {
		if side[impl] != nil {
			impls = append(impls, impl)
		}
	}
	if len(impls) == 0 {
		fmt.Fprintln(w, "(no implementation took turns)")
		return
	}
	fmt.Fprintf(w, "| |%s|\n|---|%s\n", strings.Join(impls, "|"), strings.Repeat("---:|", len(impls)))
	for _, row := range sideRows {
		cells := []string{row.label}
		cg, ours := sideMedian(side, "client-go", row.get), sideMedian(side, "kreflector", row.get)
		for _, impl := range impls {
			v := sideMedian(side, impl, row.get)
			cell := fmt.Sprintf(row.format, v)
			switch {
			case row.plain, impl == "client-go":
			case impl == "kreflector":
				if cg != 0 {
					cell += fmt.Sprintf(" (%.3fx client-go's)", v/cg)
				}
			case ours != 0:
				cell += fmt.Sprintf(" (%.3fx ours)", v/ours)
			case cg != 0: // our default did not take turns
				cell += fmt.Sprintf(" (%.3fx client-go's)", v/cg)
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
		if !(g.ratio > 0) || math.IsInf(g.ratio, 0) {
			// A figure is missing: an implementation the goal compares
			// did not run (KREFLECTOR_MEMBENCH_IMPLS).
			out = append(out, fmt.Sprintf("- %s: not measured (goal ≤ %.2f)", g.what, g.bound))
			continue
		}
		verdict := "met"
		if !(g.ratio <= g.bound) {
			verdict = "NOT met"
		}
		out = append(out, fmt.Sprintf("- %s: %.3f (goal ≤ %.2f): %s", g.what, g.ratio, g.bound, verdict))
	}
	return out
}

// A goal whose implementations did not all run says so, rather than
// being met by a ratio of 0 or missed by one of NaN.
func TestMemGoalsNotMeasured(t *testing.T) {
	const n = 10
	r := memResult{HeapPerObject: 100, SyncedHeap: 1000, SyncPeak: 1000, FewChangedPeak: 1100, AllChangedPeak: 1500, EventCPUNs: 10}
	all := map[memKey][]memResult{{"client-go", "json", n}: {r}, {"kreflector", "json", n}: {r}}
	goals := memGoals(n, all)
	for _, g := range goals {
		switch {
		case strings.HasPrefix(g, "- default: relist peak (5% changed) / synced heap:"):
			if want := "- default: relist peak (5% changed) / synced heap: 1.100 (goal ≤ 1.25): met"; g != want {
				t.Errorf("%s\nwant\n%s", g, want)
			}
		case strings.HasPrefix(g, "- default: heap per object / client-go's:"):
			if want := "- default: heap per object / client-go's: 1.000 (goal ≤ 1.02): met"; g != want {
				t.Errorf("%s\nwant\n%s", g, want)
			}
		case strings.HasPrefix(g, "- ShareStrings: heap per object / client-go's:"), strings.Contains(g, "one process"):
			if !strings.Contains(g, ": not measured (goal ≤ ") {
				t.Errorf("without its implementation's figures: %s", g)
			}
		}
	}
	if len(goals) != 14 {
		t.Errorf("%d goals, want 14", len(goals))
	}
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

// Each encoding has a table of its own, whose columns are the
// implementations that ran in it and whose ratios are to client-go's
// figure in the same encoding; the encodings' table lists what ran.
func TestPrintMemTablesEncodings(t *testing.T) {
	const n = 100
	heap := func(kib float64) []memResult {
		return []memResult{{HeapPerObject: kib * 1024, SyncedHeap: mib, SyncSeconds: 1}}
	}
	all := map[memKey][]memResult{
		{"client-go", "json", n}:                  heap(13),
		{"kreflector+compact", "json", n}:         heap(2),
		{"client-go", "protobuf", n}:              heap(10),
		{"kreflector+compact", "protobuf", n}:     heap(2),
		{"kreflector+compact", "unstructured", n}: heap(3),
		{"client-go", "unstructured", n}:          heap(30),
		{"kreflector", "unstructured", n}:         heap(33),
	}
	var b strings.Builder
	printMemTables(&b, []int{n}, 1, all)
	out := b.String()
	for _, want := range []string{
		"100 Pods, JSON, medians of 1 processes per implementation:\n\n| |client-go|kreflector+compact|\n|---|---:|---:|\n" +
			"| heap per Pod after sync | 13.00 KiB | 2.00 KiB (0.15x) |",
		"100 Pods, protobuf, medians of 1 processes per implementation:\n\n| |client-go|kreflector+compact|\n|---|---:|---:|\n" +
			"| heap per Pod after sync | 10.00 KiB | 2.00 KiB (0.20x) |",
		"100 Pods, unstructured (JSON pages and events decoded as client-go's dynamic client decodes them), medians of 1 processes per implementation:\n\n" +
			"| |client-go|kreflector|kreflector+compact|\n|---|---:|---:|---:|\n" +
			"| heap per Pod after sync | 30.00 KiB | 33.00 KiB (1.10x) | 3.00 KiB (0.10x) |",
		"| client-go, unstructured | 0.0 µs | 0 B | 1.00 s |\n| kreflector, unstructured |",
		"| kreflector+compact, json |",
		"| kreflector+compact, protobuf |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no\n%s\nin\n%s", want, out)
		}
	}
	if strings.Contains(out, "| kreflector, json |") || strings.Contains(out, "kreflector+share") {
		t.Errorf("an implementation that did not run is printed:\n%s", out)
	}
	// Without client-go's figure, no ratios.
	delete(all, memKey{"client-go", "protobuf", n})
	b.Reset()
	printMemTable(&b, n, "protobuf", memColumns(all, "protobuf", n, memCompactRows), memRows[:1], all)
	if want := "| |kreflector+compact|\n|---|---:|\n| heap per Pod after sync | 2.00 KiB |\n"; b.String() != want {
		t.Errorf("without client-go:\n%s\nwant\n%s", b.String(), want)
	}
}

// The side-by-side table has a column per implementation that took
// turns (KREFLECTOR_MEMBENCH_IMPLS may leave some out), in the tables'
// order, with ratios to our default's, or client-go's where ours did not
// take turns.
func TestSideTableColumns(t *testing.T) {
	times := func(ns float64) *memSideTimes {
		return &memSideTimes{SyncSeconds: []float64{1}, EventNs: []float64{ns}, EventCPUNs: []float64{ns}, EventAllocs: []float64{1}, EventElsewhere: []float64{0}}
	}
	var b strings.Builder
	printSideTable(&b, map[string]*memSideTimes{"kreflector+compact": times(300), "client-go": times(100)})
	want := "| |client-go|kreflector+compact|\n|---|---:|---:|\n| sync time (GOGC 100) | 1.00 s | 1.00 s (1.000x client-go's) |\n" +
		"| per watch event decoded from bytes, wall | 100 ns | 300 ns (3.000x client-go's) |\n"
	if !strings.HasPrefix(b.String(), want) {
		t.Errorf("client-go and compact:\n%s\nwant it to begin\n%s", b.String(), want)
	}
	b.Reset()
	printSideTable(&b, map[string]*memSideTimes{"kreflector+compact": times(300), "kreflector": times(100)})
	if !strings.Contains(b.String(), "| per watch event decoded from bytes, wall | 100 ns | 300 ns (3.000x ours) |") {
		t.Errorf("ours and compact:\n%s", b.String())
	}
	b.Reset()
	printSideTable(&b, map[string]*memSideTimes{})
	if b.String() != "(no implementation took turns)\n" {
		t.Errorf("nothing ran:\n%s", b.String())
	}
}
