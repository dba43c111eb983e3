package cache

import (
	"fmt"
	"io"
	"strings"
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
		printMemTable(w, n, all)
		fmt.Fprintf(w, "\n%d Pods, the encoding (decoding 20 pages alone; sync time at GOGC 100):\n\n", n)
		printEncodingTable(w, n, all)
		fmt.Fprintf(w, "\n%d Pods, goals (issue 20):\n\n", n)
		for _, g := range memGoals(n, all) {
			fmt.Fprintln(w, g)
		}
	}
}

func printMemTable(w io.Writer, n int, all map[memKey][]memResult) {
	fmt.Fprintf(w, "| |%s|\n|---|%s\n", strings.Join(memImplOrder, "|"), strings.Repeat("---:|", len(memImplOrder)))
	for _, row := range memRows {
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

// memGoal is one goal: a ratio of medians and its bound.
type memGoal struct {
	what     string
	num, den memKey
	get      func(memResult) float64
	denGet   func(memResult) float64 // nil: the same as get
	bound    float64
}

func memGoals(n int, all map[memKey][]memResult) []string {
	cg, kr := memKey{"client-go", "json", n}, memKey{"kreflector", "json", n}
	share, lean := memKey{"kreflector+share", "json", n}, memKey{"kreflector+lean", "json", n}
	heap := func(r memResult) float64 { return r.HeapPerObject }
	goals := []memGoal{
		{what: "default: relist peak (5% changed) / synced heap", num: kr, den: kr,
			get: func(r memResult) float64 { return float64(r.FewChangedPeak) }, denGet: func(r memResult) float64 { return float64(r.SyncedHeap) }, bound: 1.25},
		{what: "default: relist peak (all changed) / client-go's", num: kr, den: cg, get: func(r memResult) float64 { return float64(r.AllChangedPeak) }, bound: 1},
		{what: "default: heap per object / client-go's", num: kr, den: cg, get: heap, bound: 1.02},
		{what: "default: sync time / client-go's", num: kr, den: cg, get: func(r memResult) float64 { return r.SyncSeconds }, bound: 1.05},
		{what: "ShareStrings: heap per object / client-go's", num: share, den: cg, get: heap, bound: 0.78},
		{what: "lean (ShareStrings+ShareMaps+DropManagedFields): heap per object / client-go's", num: lean, den: cg, get: heap, bound: 0.65},
		{what: "lean: initial-sync peak / client-go's", num: lean, den: cg, get: func(r memResult) float64 { return float64(r.SyncPeak) }, bound: 0.75},
		{what: "ShareStrings: CPU per watch event decoded from bytes / our default's", num: share, den: kr, get: func(r memResult) float64 { return r.DecodedEventCPUNs }, bound: 1.15},
		{what: "(not a goal) ShareStrings: CPU per watch event decoded beforehand / our default's", num: share, den: kr, get: func(r memResult) float64 { return r.EventCPUNs }, bound: 1.15},
	}
	var out []string
	for _, g := range goals {
		den := g.denGet
		if den == nil {
			den = g.get
		}
		ratio := median(all[g.num], g.get) / median(all[g.den], den)
		verdict := "met"
		if ratio > g.bound {
			verdict = "NOT met"
		}
		out = append(out, fmt.Sprintf("- %s: %.3f (goal ≤ %.2f): %s", g.what, ratio, g.bound, verdict))
	}
	return out
}
