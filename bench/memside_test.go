package bench

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"k8s.io/apimachinery/pkg/watch"
)

// The side-by-side process of the memory benchmark: the time goals'
// figures. Heap figures need a process per implementation (a shared heap
// hides who holds what); time ratios need the opposite, one process in
// which the implementations take turns, since two processes on this kind
// of machine differ by more than the goals' margins (our sync of 10,000
// Pods and client-go's, level in one process, took 2.45 s and 2.17 s in
// two; one informer's took 2.0-2.6 s across the turns of one process).

// memSideRounds is the number of turns each implementation takes with n
// Pods: 15 up to 100,000 Pods, fewer beyond (at least 5, at 300,000 and
// more), whose turns are longer.
func memSideRounds(n int) int { return max(5, min(15, 1_500_000/max(n, 1))) }

// memSideTimes are one implementation's figures from the side-by-side
// process, one per round.
type memSideTimes struct {
	SyncSeconds []float64 // Run until the handler saw N adds and HasSynced
	EventNs     []float64 // per MODIFIED event decoded from bytes, wall
	EventCPUNs  []float64 // the same, the process's CPU time
	EventAllocs []float64 // the same, allocations
	// EventElsewhere is the cores other processes took meanwhile.
	EventElsewhere []float64
}

// timeSideBySide runs memSideRounds(res.N) rounds in which each implementation
// of res.SideImpls in turn (the order turning each round) syncs res.N Pods
// from pages and then
// takes MODIFIED watch events decoded from bytes on the sending
// goroutine, as a client's watch decoder does; at the default GOGC, one
// informer alive at a time.
func timeSideBySide(ctx context.Context, res *memResult, codec memCodec, pages *memPages) error {
	res.Side = map[string]*memSideTimes{}
	impls := res.SideImpls
	for _, impl := range impls {
		if _, ok := memImpls[impl]; !ok {
			return fmt.Errorf("membench: no implementation %q", impl)
		}
	}
	for round := range memSideRounds(res.N) {
		for k := range impls {
			impl := impls[(k+round)%len(impls)]
			t := res.Side[impl]
			if t == nil {
				t = &memSideTimes{}
				res.Side[impl] = t
			}
			if err := sideTurn(ctx, res, codec, pages, impl, t); err != nil {
				return fmt.Errorf("%s, round %d: %w", impl, round, err)
			}
		}
	}
	return nil
}

// sideTurn is one implementation's turn: a timed sync, then timed events.
func sideTurn(ctx context.Context, res *memResult, codec memCodec, pages *memPages, impl string, t *memSideTimes) error {
	lw := newMemLW(codec, pages)
	runtime.GC()
	start := time.Now()
	r, err := startMemRun(ctx, lw, memInformer(impl, res.Encoding))
	if err != nil {
		return err
	}
	defer r.stop()
	if err := r.waitSynced(int64(res.N)); err != nil {
		return err
	}
	t.SyncSeconds = append(t.SyncSeconds, time.Since(start).Seconds())
	m := min(res.N, memEvents)
	events, err := encodedEvents(res, m, memListRV(memAllChanged, res.N)+1)
	if err != nil {
		return err
	}
	ev, err := timeEvents(r, m, sendDecoded(<-lw.opened, codec, events))
	if err != nil {
		return err
	}
	t.EventNs, t.EventCPUNs = append(t.EventNs, ev.ns), append(t.EventCPUNs, ev.cpuNs)
	t.EventAllocs, t.EventElsewhere = append(t.EventAllocs, ev.allocs), append(t.EventElsewhere, ev.elsewhere)
	return nil
}

// sendDecoded returns a sender that decodes each event's bytes as codec
// says (a Pod, or an unstructured object) and sends it on w as a
// MODIFIED event.
func sendDecoded(w *memWatch, codec memCodec, events []memEvent) func() {
	return func() {
		for _, ev := range events {
			obj, _, err := codec.dec.Decode(ev.raw, nil, codec.newObj())
			if err != nil {
				panic(err) // encoded by this process a moment ago
			}
			if !w.send(watch.Event{Type: watch.Modified, Object: obj}) {
				return
			}
		}
	}
}
