// Command elastic runs an elastic sharded controller: replicas of one
// process share ConfigMaps through a ring (package ring), each holding a
// coordination.k8s.io/v1 Lease of its own, and the buckets of the hash
// space move between them as they join, die and leave.
//
// Everything runs in one process on the embedded test API server
// (cachetest, over HTTP): ConfigMaps and Leases are read and written by
// client-go's real clientsets, one per replica, each over a line that can
// go silent. First a replica whose Lease calls are refused (403, as
// without its Role) prints its informer's Health and WaitForSync error,
// which say so. Then three replicas form the ring, two join, one is killed (its
// line goes silent, as a SIGKILLed pod's does: no renew, no leave) and one
// leaves gracefully, while a writer keeps changing ConfigMaps. A sampler
// records every 50 ms which replica handles each object, and each step
// checks that no object was handled by two replicas at once and bounds
// how long any object went without a handler.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kreflector/cache/cachetest"
	"github.com/kreflector/cache/ring"
)

// The bounds each step is held to, beyond the lease duration for a kill.
const (
	gracefulBound = 5 * time.Second
	killSlack     = 5 * time.Second
	// fenceSlack is how late past its renew deadline a killed replica may
	// be seen to stop handling (the sampler's period, timers).
	fenceSlack = time.Second
	// stepTimeout bounds how long a step may take to form again.
	stepTimeout = 30 * time.Second
)

type config struct {
	objects int
	writes  float64
	settle  time.Duration
	timeout time.Duration
	ring    ringOptions
}

func main() {
	var cfg config
	flag.IntVar(&cfg.objects, "objects", 2000, "ConfigMaps on the server at the start")
	flag.Float64Var(&cfg.writes, "writes", 20, "ConfigMap writes per second while the replicas come and go (updates, some creates and deletes)")
	flag.DurationVar(&cfg.settle, "settle", 2*time.Second, "how long to keep sampling after each step has settled")
	flag.DurationVar(&cfg.timeout, "timeout", time.Minute, "give up after this long")
	flag.DurationVar(&cfg.ring.leaseDuration, "lease-duration", 3*time.Second, "the ring's LeaseDuration (whole seconds)")
	flag.DurationVar(&cfg.ring.renewDeadline, "renew-deadline", 2*time.Second, "the ring's RenewDeadline")
	flag.DurationVar(&cfg.ring.retryPeriod, "retry-period", 500*time.Millisecond, "the ring's RetryPeriod")
	flag.IntVar(&cfg.ring.buckets, "buckets", ring.DefaultBuckets, "the ring's bucket count (a power of two from 16 to 4096)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: elastic [flags]\n\nRuns replicas of an elastic sharded controller (package ring) on the embedded\nserver: three form a ring, two join, one is killed, one leaves; checks that no\nobject is handled twice and bounds how long any goes unhandled.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if cfg.objects <= 0 || cfg.writes < 0 || cfg.settle < 0 || cfg.timeout <= 0 {
		fmt.Fprintln(os.Stderr, "elastic: --objects and --timeout must be positive, --writes and --settle not negative")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	summary, err := run(ctx, cfg, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "elastic:", err)
		os.Exit(1)
	}
	fmt.Println("OK: " + summary)
}

// step is one membership change and the bound on how long an object may
// go without a handler while it happens (0 for the first, which forms the
// ring: no object has had a handler before it).
type step struct {
	title string
	do    func() error
	bound time.Duration
	kill  string // the replica killed, if any
}

// outcome is a step's figures once it has settled.
type outcome struct {
	stepStats
	took time.Duration
	// callsBefore and fencesBefore are each replica's handler calls and
	// fences when the step began.
	callsBefore  map[string]calls
	fencesBefore map[string]int64
}

func run(ctx context.Context, cfg config, out io.Writer) (string, error) {
	srv := cachetest.NewServer(cachetest.Options{})
	defer srv.Close()
	cms := srv.Resource(cachetest.Type{Resource: "configmaps", Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}})
	srv.Resource(cachetest.Type{Group: "coordination.k8s.io", Resource: "leases", Object: &coordinationv1.Lease{}, List: &coordinationv1.LeaseList{}})
	for i := range cfg.objects {
		if _, err := cms.Create(ctx, configMap(i), metav1.CreateOptions{}); err != nil {
			return "", err
		}
	}
	srv.Start()
	o := cfg.ring
	fmt.Fprintf(out, "ring: LeaseDuration %v, RenewDeadline %v, RetryPeriod %v, %d buckets; %d ConfigMaps, about %g writes/s; sampling every %v\n",
		o.leaseDuration, o.renewDeadline, o.retryPeriod, o.buckets, cfg.objects, cfg.writes, sampleEvery)
	fmt.Fprintf(out, "bounds: an object without a handler at most %v on a join or graceful leave, %v (the lease duration + %v) after a kill; never handled by two replicas at once\n",
		gracefulBound, o.leaseDuration+killSlack, killSlack)

	fmt.Fprintln(out, "-- first, a replica without the Role docs/sharding.md gives: its Lease calls are refused (403), and it says so")
	if err := showForbidden(ctx, srv.RESTConfig(), o, out); err != nil {
		return "", err
	}
	f := &fleet{cfg: srv.RESTConfig(), opts: o}
	rctx, cancelReplicas := context.WithCancel(ctx)
	defer f.stop()
	defer cancelReplicas()
	s := newSampler(cms, f)
	var bg sync.WaitGroup
	defer bg.Wait()
	sctx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	bg.Go(func() { s.run(sctx) })
	w := &writer{cms: cms, initial: cfg.objects, next: cfg.objects}
	bg.Go(func() { w.run(sctx, cfg.writes) })

	joins := func(ns ...string) func() error {
		return func() error {
			for _, n := range ns {
				if err := f.join(rctx, n); err != nil {
					return err
				}
			}
			return nil
		}
	}
	steps := []step{
		{title: "a, b and c join", do: joins("a", "b", "c")},
		{title: "d and e join", do: joins("d", "e"), bound: gracefulBound},
		{title: "b is killed: its line goes silent, as a SIGKILLed pod's (no renew, no leave)", do: func() error { f.kill("b"); return nil }, bound: o.leaseDuration + killSlack, kill: "b"},
		{title: "a leaves gracefully", do: func() error { f.leave("a"); return nil }, bound: gracefulBound},
	}
	var problems []string
	var graceful, afterKill time.Duration
	for i, st := range steps {
		fmt.Fprintf(out, "-- step %d: %s\n", i+1, st.title)
		res, err := runStep(ctx, s, f, st, cfg.settle)
		if err != nil {
			return "", fmt.Errorf("step %d (%s): %w", i+1, st.title, err)
		}
		problems = append(problems, report(out, f, st, res, i == 0)...)
		switch {
		case i == 0:
		case st.kill != "":
			afterKill = max(afterKill, res.longest)
		default:
			graceful = max(graceful, res.longest)
		}
	}
	stopSampling()
	bg.Wait()
	cancelReplicas()
	f.stop()
	var total, twice int64
	for _, rp := range f.replicas() {
		total += rp.calls.snapshot().total()
		twice += rp.twice.Load()
	}
	fmt.Fprintf(out, "-- done: %d handler calls in all, %d of them while another replica handled the object; %d writes to ConfigMaps\n", total, twice, w.n.Load())
	if twice > 0 {
		problems = append(problems, fmt.Sprintf("%d handler calls were made while another replica also handled the object", twice))
	}
	if len(problems) > 0 {
		return "", errors.New(strings.Join(problems, "; "))
	}
	return fmt.Sprintf("4 membership changes after forming (2 joins, 1 kill, 1 graceful leave), %d objects, never handled twice, longest unowned %s graceful / %s after kill (bounds %s / %s)",
		cfg.objects, round(graceful), round(afterKill), gracefulBound, o.leaseDuration+killSlack), nil
}

// runStep does st, waits until the ring has formed again (every live
// replica handles what the ring plans, every object has a handler), then
// samples for settle more.
func runStep(ctx context.Context, s *sampler, f *fleet, st step, settle time.Duration) (outcome, error) {
	// Gaps count from the start of a bounded step; for the first, from
	// when the ring has formed.
	first := st.bound == 0
	if !first {
		s.begin()
	}
	before, fences := map[string]calls{}, map[string]int64{}
	for _, rp := range f.replicas() {
		before[rp.name], fences[rp.name] = rp.calls.snapshot(), rp.fences.Load()
	}
	start := time.Now()
	if err := st.do(); err != nil {
		return outcome{}, err
	}
	wctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	for {
		formed, why := f.formed()
		if formed {
			if last := s.last(); last.samples > 0 && last.orphans == 0 && sum(last.owners) == last.objects {
				break
			}
		}
		select {
		case <-wctx.Done():
			if why == "" {
				why = "some objects have no handler"
			}
			return outcome{}, fmt.Errorf("the ring did not form again within %s: %s: %w", stepTimeout, why, wctx.Err())
		case <-time.After(sampleEvery):
		}
	}
	took := time.Since(start)
	if first {
		s.begin()
	}
	select {
	case <-ctx.Done():
		return outcome{}, ctx.Err()
	case <-time.After(settle):
	}
	return outcome{stepStats: s.end(), took: took, callsBefore: before, fencesBefore: fences}, nil
}

// report prints a step's figures and returns the bounds it broke.
func report(out io.Writer, f *fleet, st step, res outcome, first bool) []string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(res.owners)) {
		parts = append(parts, fmt.Sprintf("%s %d", name, res.owners[name]))
	}
	again := " again"
	if first {
		again = ""
	}
	fmt.Fprintf(out, "   formed%s in %s; objects per replica: %s (of %d)\n", again, round(res.took), strings.Join(parts, ", "), res.objects)
	fmt.Fprintln(out, "   handler calls during the step (adds / same-version updates / changes / deletes):")
	for _, rp := range f.replicas() {
		c := rp.calls.snapshot().minus(res.callsBefore[rp.name])
		if c.total() == 0 && rp.gone.Load() {
			continue
		}
		fmt.Fprintf(out, "     %s %d / %d / %d / %d\n", rp.name, c.adds, c.replaced, c.changes, c.deletes)
	}
	var problems []string
	if first {
		fmt.Fprintln(out, "   (no object had a handler before the ring first formed; gaps count from here on)")
	} else {
		verdict := "within"
		if res.longest > st.bound {
			verdict = "BEYOND"
			problems = append(problems, fmt.Sprintf("%s: %s went %s without a handler, bound %s", st.title, res.longestObj, round(res.longest), st.bound))
		}
		fmt.Fprintf(out, "   longest without a handler: %s (%s), %s the bound of %s\n", round(res.longest), orNone(res.longestObj), verdict, st.bound)
	}
	if res.twice > 0 {
		problems = append(problems, fmt.Sprintf("%s: %d samples found an object handled by two replicas", st.title, res.twice))
		fmt.Fprintf(out, "   handled by two replicas at once: in %d (sample, object) pairs of %d samples\n", res.twice, res.samples)
	} else {
		fmt.Fprintf(out, "   handled by two replicas at once: never, in %d samples\n", res.samples)
	}
	var fenced []string
	for _, rp := range f.replicas() {
		if n := rp.fences.Load() - res.fencesBefore[rp.name]; n > 0 {
			fenced = append(fenced, fmt.Sprintf("%s %d times", rp.name, n))
		}
	}
	if len(fenced) > 0 {
		// Not a broken bound in itself (fencing is what keeps handling
		// single), but the reason for long gaps: the machine is too busy.
		fmt.Fprintf(out, "   live replicas that fenced themselves (no renew within %s; an overloaded machine?): %s\n", f.opts.renewDeadline, strings.Join(fenced, ", "))
	}
	if st.kill != "" {
		rp := f.byName(st.kill)
		fenced := time.Duration(rp.fencedAfter.Load())
		fmt.Fprintf(out, "   %s fenced itself %s after the kill (renew deadline %s); handler calls after that: %d\n", st.kill, round(fenced), f.opts.renewDeadline, rp.callsAfterFence.Load())
		switch {
		case fenced == 0:
			problems = append(problems, st.kill+" never fenced itself")
		case fenced > f.opts.renewDeadline+fenceSlack:
			problems = append(problems, fmt.Sprintf("%s went on handling for %s after the kill, past its renew deadline (%s) + %s", st.kill, round(fenced), f.opts.renewDeadline, fenceSlack))
		}
		if n := rp.callsAfterFence.Load(); n > 0 {
			problems = append(problems, fmt.Sprintf("%s's handler was called %d times after it fenced itself", st.kill, n))
		}
	}
	return problems
}

// writer changes ConfigMaps at a steady rate: mostly updates, one write
// in five a create and one in five a delete of one it created.
type writer struct {
	cms *cachetest.Resource
	// initial is how many ConfigMaps the server began with (the ones
	// updated); next numbers the next one created.
	initial, next int
	created       []int
	n             atomic.Int64
}

func (w *writer) run(ctx context.Context, perSecond float64) {
	if perSecond == 0 {
		return
	}
	t := time.NewTicker(time.Duration(float64(time.Second) / perSecond))
	defer t.Stop()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var err error
		switch {
		case i%5 == 1:
			_, err = w.cms.Create(ctx, configMap(w.next), metav1.CreateOptions{})
			w.created = append(w.created, w.next)
			w.next++
		case i%5 == 3 && len(w.created) > 0:
			c := configMap(w.created[0])
			w.created = w.created[1:]
			_, err = w.cms.Delete(ctx, c.Namespace, c.Name, metav1.DeleteOptions{})
		default:
			c := configMap(rng.IntN(w.initial))
			c.Data["v"] = fmt.Sprint(i)
			_, err = w.cms.Update(ctx, c, metav1.UpdateOptions{})
		}
		if err == nil {
			w.n.Add(1)
		}
	}
}

func configMap(i int) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("team-%d", i%7), Name: fmt.Sprintf("cm-%04d", i)},
		Data:       map[string]string{"v": "1"},
	}
}

func round(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
