package bench

import (
	"fmt"
	"io"
	"slices"
	"testing"
)

// The table BenchmarkColdStart prints: one Markdown row per cell, medians
// of its processes, with the ratio to client-go's cell of the same
// encoding, mode and GOMAXPROCS.

// coldMedian is the median of f over rs.
func coldMedian(rs []coldResult, f func(coldResult) float64) float64 { return medianOf(rs, f) }

func coldSyncS(r coldResult) float64 { return r.SyncSeconds }
func coldCPU(r coldResult) float64   { return r.SyncCPU }
func coldPeak(r coldResult) float64  { return float64(r.Peak) / mib }
func coldHeld(r coldResult) float64  { return float64(r.Held) / mib }

// coldRange is the lowest and highest of f over rs.
func coldRange(rs []coldResult, f func(coldResult) float64) (lo, hi float64) {
	for i, r := range rs {
		v := f(r)
		if i == 0 || v < lo {
			lo = v
		}
		if i == 0 || v > hi {
			hi = v
		}
	}
	return lo, hi
}

// coldRatio is "0.93x": f's median over rs against client-go's, or empty
// for client-go's own row or none to compare with.
func coldRatio(rs, base []coldResult, self bool, f func(coldResult) float64) string {
	if self || len(base) == 0 || len(rs) == 0 {
		return ""
	}
	b := coldMedian(base, f)
	if b == 0 {
		return ""
	}
	return fmt.Sprintf("%.2fx", coldMedian(rs, f)/b)
}

func printColdTable(w io.Writer, set coldSettings, cells []coldCell, all map[coldCell][]coldResult) {
	fmt.Fprintf(w, "\n%d Pods, medians of %d processes per cell (sync: lowest–highest; CPU: the process's during the sync; other cores: what other processes, the server's included, took meanwhile):\n\n", set.n, set.runs)
	fmt.Fprintln(w, "| encoding | mode | gzip | GOMAXPROCS | implementation | sync (s) | ×client-go | CPU (s) | ×client-go | other cores | peak heap (MiB) | ×client-go | held (MiB) | requests | MiB sent |")
	fmt.Fprintln(w, "|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, c := range cells {
		rs := all[c]
		if len(rs) == 0 {
			continue
		}
		base := c
		base.Impl = "client-go"
		self := c.Impl == "client-go"
		lo, hi := coldRange(rs, coldSyncS)
		cost := rs[0].Cost
		heap := "– | | –"
		if !rs[0].NoHeap {
			heap = fmt.Sprintf("%.0f | %s | %.0f", coldMedian(rs, coldPeak), coldRatio(rs, all[base], self, coldPeak), coldMedian(rs, coldHeld))
		}
		gz := "off"
		if c.Gzip {
			gz = "on"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %d | %s | %.2f (%.2f–%.2f) | %s | %.2f | %s | %.1f | %s | %d | %.1f |\n",
			c.Encoding, c.Mode, gz, c.Procs, c.Impl,
			coldMedian(rs, coldSyncS), lo, hi, coldRatio(rs, all[base], self, coldSyncS),
			coldMedian(rs, coldCPU), coldRatio(rs, all[base], self, coldCPU),
			coldMedian(rs, func(r coldResult) float64 { return r.Elsewhere }),
			heap, cost.requests(), float64(cost.Bytes)/mib)
	}
}

func TestParseColdCells(t *testing.T) {
	sel, err := parseColdCells("mode=watchlist,paged;impl=kreflector,client-go  procs=2")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"enc":   {"json", "protobuf"},
		"mode":  {"paged", "watchlist"},
		"gzip":  {"off", "on"},
		"procs": {"2"},
		"impl":  {"client-go", "kreflector"},
	}
	for dim, v := range want {
		if !slices.Equal(sel[dim], v) {
			t.Errorf("%s = %v, want %v", dim, sel[dim], v)
		}
	}
	for _, bad := range []string{"mode=list", "encoding=json", "procs"} {
		if _, err := parseColdCells(bad); err == nil {
			t.Errorf("parseColdCells(%q) accepted it", bad)
		}
	}
	set := coldSettings{encs: sel["enc"], modes: sel["mode"], gzips: sel["gzip"], procs: sel["procs"], impls: sel["impl"]}
	groups := coldGroups(set.cells())
	if len(groups) != 8 || len(groups[0]) != 2 || groups[0][0].Impl != "client-go" || groups[0][0].Gzip || !groups[1][0].Gzip ||
		groups[7][1].Encoding != "protobuf" {
		t.Errorf("groups = %v", groups)
	}
}
