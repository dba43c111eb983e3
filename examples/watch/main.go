// Command watch runs the kreflector Reflector over ConfigMaps.
//
// By default it starts an in-memory demo server, drives a random workload
// against it while injecting faults (expired resourceVersions, dropped
// watches, 429s), shows a status line, and ends by checking that the store
// holds exactly what the server holds. With --kubeconfig (or KUBECONFIG) it
// watches a real cluster read-only instead.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kreflector/cache"
)

// stepInterval is the pause between two writes of the demo workload.
const stepInterval = 2 * time.Millisecond

type config struct {
	duration   time.Duration
	objects    int
	faultRate  float64
	kubeconfig string
	seed       uint64
}

func main() {
	var cfg config
	flag.DurationVar(&cfg.duration, "duration", 20*time.Second, "how long to run the workload (demo) or to watch (cluster)")
	flag.IntVar(&cfg.objects, "objects", 200, "how many ConfigMaps the demo workload keeps around")
	flag.Float64Var(&cfg.faultRate, "fault-rate", 1, "average faults injected per second (demo)")
	flag.StringVar(&cfg.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "watch the cluster of this kubeconfig read-only instead of the demo server")
	flag.Uint64Var(&cfg.seed, "seed", 1, "seed of the demo workload")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: watch [flags]\n\nRuns the kreflector Reflector over ConfigMaps: on a built-in demo server with\ninjected faults (default), or read-only on a real cluster (--kubeconfig).\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if cfg.faultRate < 0 || cfg.faultRate > 1/stepInterval.Seconds() || cfg.objects < 1 || cfg.duration <= 0 {
		fmt.Fprintf(os.Stderr, "watch: --fault-rate must be in [0, %g], --objects and --duration positive\n", 1/stepInterval.Seconds())
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	if cfg.kubeconfig != "" {
		err = watchCluster(ctx, cfg)
	} else {
		err = runDemo(ctx, cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "watch:", err)
		os.Exit(1)
	}
}

// countingStore wraps a Store to count what the Reflector does to it.
type countingStore struct {
	cache.Store
	events, relists atomic.Int64
}

func (s *countingStore) Add(o interface{}) error    { s.events.Add(1); return s.Store.Add(o) }
func (s *countingStore) Update(o interface{}) error { s.events.Add(1); return s.Store.Update(o) }
func (s *countingStore) Delete(o interface{}) error { s.events.Add(1); return s.Store.Delete(o) }
func (s *countingStore) Replace(l []interface{}, rv string) error {
	s.relists.Add(1)
	return s.Store.Replace(l, rv)
}

func runDemo(ctx context.Context, cfg config) error {
	srv := newSim()
	store := &countingStore{Store: cache.NewStore(cache.MetaNamespaceKeyFunc)}
	r := cache.NewReflectorWithOptions(srv, &corev1.ConfigMap{}, store, cache.ReflectorOptions{Name: "demo"})
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { r.RunWithContext(rctx); close(done) }()
	faults := drive(ctx, cfg, srv, func() { report(os.Stdout, r, store, false) })
	// Let the Reflector catch up with the last writes, then compare. After
	// many faults it may be in its longest backoff (30 s, up to 60 s with
	// jitter) before it relists, so allow for that.
	settle := time.Now().Add(90 * time.Second)
	for time.Now().Before(settle) && !slices.Equal(storeSnapshot(store), srv.snapshot()) {
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	<-done
	report(os.Stdout, r, store, true)
	return summarize(os.Stdout, srv.snapshot(), storeSnapshot(store), faults)
}

// drive runs the random workload until cfg.duration has passed, calling
// tick about once a second, and returns how many faults of each kind it
// injected.
func drive(ctx context.Context, cfg config, srv *sim, tick func()) map[string]int {
	rng := rand.New(rand.NewPCG(cfg.seed, cfg.seed^0x9e3779b97f4a7c15))
	faults := map[string]int{}
	deadline := time.Now().Add(cfg.duration)
	lastTick := time.Now()
	for step := 0; time.Now().Before(deadline) && ctx.Err() == nil; step++ {
		name := "cm-" + strconv.Itoa(rng.IntN(cfg.objects))
		switch rng.IntN(4) {
		case 0:
			srv.write(watch.Deleted, name, "")
		default:
			srv.write(watch.Modified, name, strconv.Itoa(step))
		}
		if rng.Float64() < cfg.faultRate*stepInterval.Seconds() {
			faults[injectFault(srv, rng)]++
		}
		if time.Since(lastTick) >= time.Second {
			tick()
			lastTick = time.Now()
		}
		time.Sleep(stepInterval)
	}
	return faults
}

func injectFault(srv *sim, rng *rand.Rand) string {
	switch rng.IntN(3) {
	case 0:
		srv.compact()
		srv.closeWatches()
		return "expired-rv"
	case 1:
		srv.closeWatches()
		return "dropped-watch"
	default:
		srv.throttleWatches(1)
		return "throttled-429"
	}
}

func storeSnapshot(s cache.Store) []string {
	out := []string{}
	for _, o := range s.List() {
		c := o.(*corev1.ConfigMap)
		out = append(out, c.Name+"@"+c.ResourceVersion)
	}
	sort.Strings(out)
	return out
}

// report prints one status line: in place on a terminal, as a log line
// otherwise (and always for the final one).
func report(w io.Writer, r *cache.Reflector, s *countingStore, final bool) {
	h := r.Health()
	line := fmt.Sprintf("objects=%d events=%d relists=%d health=%s%s lastRV=%s",
		len(s.ListKeys()), s.events.Load(), s.relists.Load(), h.State, reasonSuffix(h), r.LastSyncResourceVersion())
	if isTerminal(w) && !final {
		fmt.Fprintf(w, "\r\033[K%s", line)
		return
	}
	if isTerminal(w) {
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, line)
}

func reasonSuffix(h cache.Health) string {
	if h.Reason == cache.ReasonNone {
		return ""
	}
	return "(" + string(h.Reason) + ")"
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// summarize compares the store with the server and fails on any difference.
func summarize(w io.Writer, server, store []string, faults map[string]int) error {
	have := map[string]bool{}
	for _, s := range store {
		have[s] = true
	}
	var lost, extra int
	for _, s := range server {
		if !have[s] {
			lost++
		}
		delete(have, s)
	}
	extra = len(have)
	fmt.Fprintf(w, "faults injected: expired-rv=%d dropped-watch=%d throttled-429=%d\n", faults["expired-rv"], faults["dropped-watch"], faults["throttled-429"])
	fmt.Fprintf(w, "server objects=%d store objects=%d missing-or-stale=%d phantom-or-stale=%d\n", len(server), len(store), lost, extra)
	if lost != 0 || extra != 0 {
		return fmt.Errorf("the store does not match the server")
	}
	fmt.Fprintln(w, "OK: the store matches the server exactly")
	return nil
}

// watchCluster watches ConfigMaps of a real cluster, read-only.
func watchCluster(ctx context.Context, cfg config) error {
	restCfg, err := clientcmd.BuildConfigFromFlags("", cfg.kubeconfig)
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	cs, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("building client: %w", err)
	}
	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", "", fields.Everything())
	store := &countingStore{Store: cache.NewStore(cache.MetaNamespaceKeyFunc)}
	r := cache.NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, cache.ReflectorOptions{Name: "cluster"})
	ctx, cancel := context.WithTimeout(ctx, cfg.duration)
	defer cancel()
	done := make(chan struct{})
	go func() { r.RunWithContext(ctx); close(done) }()
	if err := r.WaitForSync(ctx); err != nil {
		<-done
		return fmt.Errorf("initial sync: %w", err)
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-done:
			report(os.Stdout, r, store, true)
			return nil
		case <-t.C:
			report(os.Stdout, r, store, false)
		}
	}
}
