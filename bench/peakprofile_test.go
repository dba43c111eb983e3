package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
)

// peakProfileEnv names a directory: when set, a memory benchmark process
// writes the heap profile it took at each phase's peak there, one file per
// phase and process (sync-<pid>.pprof, relist-5-<pid>.pprof, ...).
const peakProfileEnv = "KREFLECTOR_MEMBENCH_PEAKPROFILE"

// peakProfiler keeps the heap profile of the highest live heap seen so
// far; only the sampler's goroutine calls at, and finish runs after it is
// joined.
type peakProfiler struct {
	path string
	last bytes.Buffer
}

// newPeakProfiler returns nil unless peakProfileEnv is set.
func newPeakProfiler(phase string) *peakProfiler {
	dir := os.Getenv(peakProfileEnv)
	if dir == "" {
		return nil
	}
	return &peakProfiler{path: filepath.Join(dir, fmt.Sprintf("%s-%d.pprof", phase, os.Getpid()))}
}

// at takes a heap profile: the live heap just reached a new peak. The
// profile is as of the last collection, as the sampled figure is.
func (p *peakProfiler) at() {
	p.last.Reset()
	if err := pprof.Lookup("heap").WriteTo(&p.last, 0); err != nil {
		p.last.Reset()
	}
}

// write saves the last profile taken, if any; a failure is reported on
// stderr (a diagnostic must not fail the measurement).
func (p *peakProfiler) write() {
	if p.last.Len() == 0 {
		return
	}
	if err := os.WriteFile(p.path, p.last.Bytes(), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "membench: %v\n", err)
	}
}
