package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The machine's other load during a timed phase of the memory benchmark.
//
// A run's time figures are read knowing what else ran: each timed event
// phase also records the cores that other processes (and the
// hypervisor, as steal) took meanwhile, and the side-by-side table
// prints its median. (On the benchmark machine a core kept busy by a
// shell loop slowed every informer alike and left the ratios where they
// were; see docs/benchmarks.md.)

// clockTicksPerSecond is Linux's USER_HZ, the unit of /proc/stat: 100 on
// every architecture Go builds this benchmark for.
const clockTicksPerSecond = 100

// machineBusy is the CPU time every core of the machine has spent busy
// (user, nice, system, irq, softirq and steal) since boot, read from
// /proc/stat; false where that cannot be read (not Linux).
func machineBusy() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	d, err := parseMachineBusy(string(b))
	return d, err == nil
}

// parseMachineBusy reads the busy time from the aggregate "cpu" line of
// /proc/stat's content. Guest time is already counted in user time.
func parseMachineBusy(stat string) (time.Duration, error) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("no aggregate cpu line of 8 counters: %q", line)
	}
	var ticks uint64
	// user nice system idle iowait irq softirq steal: idle and iowait
	// are not busy.
	for i, v := range f[1:9] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cpu counter %d: %w", i+1, err)
		}
		if i != 3 && i != 4 {
			ticks += n
		}
	}
	return time.Duration(ticks) * time.Second / clockTicksPerSecond, nil
}

// loadElsewhere is the number of cores that something other than this
// process kept busy, on average, over wall: the machine's busy time less
// own (this process's CPU time), never below zero.
func loadElsewhere(machine, own, wall time.Duration) float64 {
	if wall <= 0 || machine <= own {
		return 0
	}
	return (machine - own).Seconds() / wall.Seconds()
}

func TestParseMachineBusy(t *testing.T) {
	const stat = "cpu  300 20 100 5000 40 7 3 50 11 0\ncpu0 150 10 50 2500 20 3 1 25 5 0\n"
	got, err := parseMachineBusy(stat)
	if err != nil {
		t.Fatal(err)
	}
	// 300+20+100+7+3+50 ticks of 10 ms; idle, iowait and guest left out.
	if want := 4800 * time.Millisecond; got != want {
		t.Fatalf("busy = %v, want %v", got, want)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4 5 6 7 8\n", "cpu 1 2 3 4 5 6 7\n", "cpu 1 2 x 4 5 6 7 8\n"} {
		if _, err := parseMachineBusy(bad); err == nil {
			t.Errorf("parseMachineBusy(%q): no error", bad)
		}
	}
}

func TestLoadElsewhere(t *testing.T) {
	for _, c := range []struct {
		machine, own, wall time.Duration
		want               float64
	}{
		{3 * time.Second, time.Second, 4 * time.Second, 0.5},
		// Tick rounding can put the machine's figure below our own.
		{time.Second, 1010 * time.Millisecond, time.Second, 0},
		{time.Second, 0, 0, 0},
	} {
		if got := loadElsewhere(c.machine, c.own, c.wall); got != c.want {
			t.Errorf("loadElsewhere(%v, %v, %v) = %v, want %v", c.machine, c.own, c.wall, got, c.want)
		}
	}
}

// The load row prints each informer's median as it is, with no ratio to
// client-go's or ours: it is about the machine, not the informers.
func TestSideTableLoadRowHasNoRatios(t *testing.T) {
	side := map[string]*memSideTimes{}
	for k, impl := range memImplOrder {
		side[impl] = &memSideTimes{
			SyncSeconds: []float64{1}, EventNs: []float64{100}, EventCPUNs: []float64{100},
			EventAllocs: []float64{1}, EventElsewhere: []float64{0.25 * float64(k)},
		}
	}
	var b strings.Builder
	printSideTable(&b, side)
	var row string
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.Contains(line, "other processes") {
			row = line
		}
	}
	want := "| … cores other processes took meanwhile |"
	for k := range memImplOrder {
		want += fmt.Sprintf(" %.2f |", 0.25*float64(k))
	}
	if row != want {
		t.Errorf("load row\n%s\nwant\n%s", row, want)
	}
	if !strings.Contains(b.String(), "100 ns (1.000x client-go's)") {
		t.Errorf("the other rows lost their ratios:\n%s", b.String())
	}
}
