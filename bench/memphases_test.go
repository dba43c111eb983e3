package bench

import (
	"bytes"
	"context"
	"fmt"
	"runtime/metrics"
	"strconv"
	"sync"
	"syscall"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache/internal/podgen"
)

// The measured phases of a memory benchmark process (memchild_test.go).

// peakSampler follows the live heap, as of each collection, every
// millisecond until finish, and keeps its peak.
type peakSampler struct {
	stop    chan struct{}
	wg      sync.WaitGroup
	peak    uint64
	profile *peakProfiler // nil unless asked for (peakProfileEnv)
}

func startPeak() *peakSampler { return startProfiledPeak("") }

// startProfiledPeak is startPeak, with a heap profile at the peak written
// for phase when peakProfileEnv asks for one.
func startProfiledPeak(phase string) *peakSampler {
	p := &peakSampler{stop: make(chan struct{})}
	if phase != "" {
		p.profile = newPeakProfiler(phase)
	}
	p.wg.Go(p.run)
	return p
}

func (p *peakSampler) run() {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		metrics.Read(s)
		if v := s[0].Value.Uint64(); v > p.peak {
			p.peak = v
			if p.profile != nil {
				p.profile.at()
			}
		}
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
	}
}

// finish stops the sampler and returns the peak above base.
func (p *peakSampler) finish(base uint64) uint64 {
	close(p.stop)
	p.wg.Wait()
	if p.profile != nil {
		p.profile.write()
	}
	return p.peak - min(p.peak, base)
}

// memoryPhases runs, at GOGC 10, a sync and two relists with their peaks
// sampled, then watch events at the default GOGC. One informer runs
// throughout.
func memoryPhases(ctx context.Context, res *memResult, lw *memLW, newInf func(clientgocache.ListerWatcher) clientgocache.SharedIndexInformer, versions [memVersions]*memPages) error {
	memGOGC(memGCPercent)
	defer memGOGC(100)
	r, base, err := measuredSync(ctx, res, lw, newInf)
	if err != nil {
		return err
	}
	defer r.stop()
	w := <-lw.opened
	if res.FewChangedPeak, res.FewChangedAfter, w, err = memRelist(r, lw, w, versions[memFewChanged], res.N, memFewChanged, base); err != nil {
		return err
	}
	if res.AllChangedPeak, res.AllChangedAfter, w, err = memRelist(r, lw, w, versions[memAllChanged], res.N, memAllChanged, base); err != nil {
		return err
	}
	memGOGC(100)
	return watchEvents(res, r, w)
}

// measuredSync syncs an informer of res.N objects, its peak live heap
// sampled, and sets SyncPeak, SyncedHeap and HeapPerObject; it returns
// the informer, running (stop it), and the live heap before it started.
func measuredSync(ctx context.Context, res *memResult, lw *memLW, newInf func(clientgocache.ListerWatcher) clientgocache.SharedIndexInformer) (*memRun, uint64, error) {
	base := liveHeapNow()
	peak := startProfiledPeak("sync")
	r, err := startMemRun(ctx, lw, newInf)
	if err != nil {
		return nil, 0, err
	}
	if err := r.waitSynced(int64(res.N)); err != nil {
		r.stop()
		return nil, 0, err
	}
	res.SyncPeak = peak.finish(base)
	res.SyncedHeap = liveHeapNow() - base
	if p := newPeakProfiler("synced"); p != nil {
		p.at()
		p.write()
	}
	res.HeapPerObject = float64(res.SyncedHeap) / float64(res.N)
	return r, base, nil
}

// memRelist ends the watch w with a 410 after making LISTs answer pages, and
// waits until the relist is done: the handler has had an update per Pod
// and the informer watches again. It returns the peak live heap above base
// during the relist, the live heap above base after it, and the new watch.
func memRelist(r *memRun, lw *memLW, w *memWatch, pages *memPages, n, v int, base uint64) (uint64, uint64, *memWatch, error) {
	lw.serve(pages)
	want := r.h.calls() + int64(n)
	liveHeapNow()
	peak := startProfiledPeak(fmt.Sprintf("relist-%d", v))
	if !w.expire() {
		return 0, 0, nil, fmt.Errorf("membench: the watch was stopped before its 410")
	}
	if err := r.h.wait(want); err != nil {
		return 0, 0, nil, err
	}
	var next *memWatch
	select {
	case next = <-lw.opened:
	case <-time.After(time.Minute):
		return 0, 0, nil, fmt.Errorf("membench: no watch after the relist")
	}
	p := peak.finish(base)
	if err := checkMemRelisted(r.inf.GetStore(), n, v); err != nil {
		return 0, 0, nil, err
	}
	return p, liveHeapNow() - base, next, nil
}

// checkMemRelisted checks that the store holds n Pods at version v's
// resourceVersions, as the relist should have left it (typed or
// unstructured).
func checkMemRelisted(s clientgocache.Store, n, v int) error {
	if got := len(s.ListKeys()); got != n {
		return fmt.Errorf("membench: the store holds %d Pods after the relist, want %d", got, n)
	}
	for _, i := range []int{0, 1, n - 1} {
		p := memPod(v, n, i)
		obj, ok, err := s.GetByKey(p.Namespace + "/" + p.Name)
		if err != nil || !ok {
			return fmt.Errorf("membench: Pod %d missing after the relist (%v)", i, err)
		}
		m, err := apimeta.Accessor(obj)
		if err != nil {
			return fmt.Errorf("membench: Pod %d is held as a %T: %w", i, obj, err)
		}
		if got, want := m.GetResourceVersion(), strconv.Itoa(memPodRV(v, n, i)); got != want {
			return fmt.Errorf("membench: Pod %d at RV %s after the relist, want %s", i, got, want)
		}
	}
	return nil
}

// memEvents is the number of watch events of each watch phase, at most.
const memEvents = 20_000

// watchEvents runs the two watch phases on w: MODIFIED events for
// existing Pods decoded beforehand (what the informer alone costs), then
// as many more sent as bytes and decoded on the sending goroutine, as a
// client's watch decoder does (what a program pays per event).
func watchEvents(res *memResult, r *memRun, w *memWatch) error {
	m := min(res.N, memEvents)
	rv := memListRV(memAllChanged, res.N) + 1
	events, err := encodedEvents(res, m, rv)
	if err != nil {
		return err
	}
	if err := decodeAll(res, events); err != nil {
		return err
	}
	t, err := timeEvents(r, m, func() {
		for _, ev := range events {
			if !w.send(watch.Event{Type: watch.Modified, Object: ev.obj}) {
				return
			}
		}
	})
	if err != nil {
		return err
	}
	res.EventNs, res.EventCPUNs, res.EventAllocs, res.EventBytes = t.ns, t.cpuNs, t.allocs, t.bytes
	if events, err = encodedEvents(res, m, rv+m); err != nil {
		return err
	}
	t, err = timeEvents(r, m, sendDecoded(w, memCodecOf(res.Encoding), events))
	res.DecodedEventNs, res.DecodedEventCPUNs = t.ns, t.cpuNs
	return err
}

// memEvent is one event's Pod, encoded and (once decodeAll ran) decoded.
type memEvent struct {
	raw []byte
	obj apiruntime.Object
}

// encodedEvents encodes Pods 0..m-1 at resourceVersions from rv on, past
// every version the LISTs served, as the server sends them in
// res.Encoding (JSON for unstructured).
func encodedEvents(res *memResult, m, rv int) ([]memEvent, error) {
	enc := memCodecOf(res.Encoding).enc
	events := make([]memEvent, m)
	for i := range events {
		var buf bytes.Buffer
		if err := enc.Encode(podgen.Pod(i, rv+i), &buf); err != nil {
			return nil, err
		}
		events[i].raw = buf.Bytes()
	}
	return events, nil
}

// decodeAll decodes each event's bytes into its obj, as the informer's
// client decodes them: a Pod, or an unstructured object.
func decodeAll(res *memResult, events []memEvent) error {
	codec := memCodecOf(res.Encoding)
	for i := range events {
		obj, _, err := codec.dec.Decode(events[i].raw, nil, codec.newObj())
		if err != nil {
			return err
		}
		events[i].obj = obj
	}
	return nil
}

// eventTimes are the costs per event of a watch phase, and elsewhere
// the cores other processes took meanwhile (see loadElsewhere; 0 where
// the machine's load cannot be read).
type eventTimes struct{ ns, cpuNs, allocs, bytes, elsewhere float64 }

// timeEvents runs send on a goroutine of its own and measures, per event,
// until the handler has had m more calls: wall time, the process's CPU
// time (every goroutine, the collector's included), and allocations;
// and the machine's other load meanwhile.
func timeEvents(r *memRun, m int, send func()) (eventTimes, error) {
	want := r.h.calls() + int64(m)
	liveHeapNow()
	before, cpu0 := allocCounts(), processCPU()
	busy0, busyKnown := machineBusy()
	start := time.Now()
	go send()
	if err := r.h.wait(want); err != nil {
		return eventTimes{}, err
	}
	elapsed, cpu := time.Since(start), processCPU()-cpu0
	busy1, _ := machineBusy()
	after := allocCounts()
	per := func(v float64) float64 { return v / float64(m) }
	t := eventTimes{
		ns: per(float64(elapsed.Nanoseconds())), cpuNs: per(float64(cpu.Nanoseconds())),
		allocs: per(float64(after[0] - before[0])), bytes: per(float64(after[1] - before[1])),
	}
	if busyKnown {
		t.elsewhere = loadElsewhere(busy1-busy0, cpu, elapsed)
	}
	return t, nil
}

// processCPU is the user and system CPU time this process has used.
func processCPU() time.Duration {
	user, sys := processTimes()
	return user + sys
}

// processTimes is the process's user and system CPU time so far; both are
// 0 if the kernel does not say (getrusage cannot fail for RUSAGE_SELF).
func processTimes() (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// allocCounts returns the objects and bytes allocated so far.
func allocCounts() [2]uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:objects"}, {Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return [2]uint64{s[0].Value.Uint64(), s[1].Value.Uint64()}
}
