// Command watch runs the kreflector Reflector over ConfigMaps.
//
// By default it starts the embedded test API server (cachetest, served over
// HTTP on loopback), reads it through client-go's real Clientset exactly as
// a program reads a cluster, drives a random workload against it while
// injecting faults (expired resourceVersions, dropped watches, 429s), shows
// a status line, and ends by checking that the store holds exactly what the
// server holds. With --kubeconfig (or KUBECONFIG) it watches a real cluster
// read-only instead.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/cachetest"
)

// stepInterval is the pause between two writes of the demo workload.
const stepInterval = 2 * time.Millisecond

type config struct {
	duration   time.Duration
	syncWait   time.Duration
	objects    int
	faultRate  float64
	kubeconfig string
	seed       uint64
}

func main() {
	var cfg config
	flag.DurationVar(&cfg.duration, "duration", 20*time.Second, "how long to run the workload (demo) or to watch once synced (cluster)")
	flag.DurationVar(&cfg.syncWait, "sync-timeout", time.Minute, "how long to wait for the initial sync of a cluster's ConfigMaps")
	flag.IntVar(&cfg.objects, "objects", 200, "how many ConfigMaps the demo workload keeps around")
	flag.Float64Var(&cfg.faultRate, "fault-rate", 1, "average faults injected per second (demo)")
	flag.StringVar(&cfg.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "watch the cluster of this kubeconfig read-only instead of the demo server")
	flag.Uint64Var(&cfg.seed, "seed", 1, "seed of the demo workload")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: watch [flags]\n\nRuns the kreflector Reflector over ConfigMaps: on the embedded test API server\nwith a workload and injected faults (default), or read-only on a real cluster\n(--kubeconfig).\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if cfg.faultRate < 0 || cfg.faultRate > 1/stepInterval.Seconds() || cfg.objects < 1 || cfg.duration <= 0 || cfg.syncWait <= 0 {
		fmt.Fprintf(os.Stderr, "watch: --fault-rate must be in [0, %g], --objects, --duration and --sync-timeout positive\n", 1/stepInterval.Seconds())
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

// newReflector returns a Reflector over every namespace's ConfigMaps of the
// API server that cfg reaches, into a new store.
func newReflector(cfg *rest.Config, name string) (*cache.Reflector, cache.Store, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("building client: %w", err)
	}
	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", metav1.NamespaceAll, fields.Everything())
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	return cache.NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, cache.ReflectorOptions{Name: name}), store, nil
}

func runDemo(ctx context.Context, cfg config) error {
	srv := cachetest.NewServer(cachetest.Options{HistoryLimit: 2000})
	defer srv.Close()
	cms := srv.Resource(cachetest.Type{Resource: "configmaps", Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}})
	srv.Start()
	r, store, err := newReflector(srv.RESTConfig(), "demo")
	if err != nil {
		return err
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { r.RunWithContext(rctx); close(done) }()
	st := newStatus(os.Stdout, r, store)
	faults, err := drive(ctx, cfg, cms, st.tick)
	if err == nil {
		settle(ctx, r, srv)
	}
	cancel()
	<-done
	st.final()
	if err != nil {
		return err
	}
	objs, _ := cms.Objects()
	return summarize(os.Stdout, cachetest.Compare(objs, store.List()), len(objs), len(store.ListKeys()), faults)
}

// drive runs the random workload until cfg.duration has passed, calling
// tick about once a second, and returns how many faults of each kind it
// injected.
func drive(ctx context.Context, cfg config, cms *cachetest.Resource, tick func()) (map[string]int, error) {
	rng := rand.New(rand.NewPCG(cfg.seed, cfg.seed^0x9e3779b97f4a7c15))
	faults := map[string]int{}
	deadline := time.Now().Add(cfg.duration)
	lastTick := time.Now()
	for step := 0; time.Now().Before(deadline) && ctx.Err() == nil; step++ {
		name := "cm-" + strconv.Itoa(rng.IntN(cfg.objects))
		if err := write(ctx, cms, name, rng.IntN(4) == 0, step); err != nil {
			return faults, err
		}
		if rng.Float64() < cfg.faultRate*stepInterval.Seconds() {
			faults[injectFault(cms.Server(), rng)]++
		}
		if time.Since(lastTick) >= time.Second {
			tick()
			lastTick = time.Now()
		}
		time.Sleep(stepInterval)
	}
	return faults, nil
}

// write deletes the ConfigMap name, or creates or updates it.
func write(ctx context.Context, cms *cachetest.Resource, name string, remove bool, step int) error {
	if remove {
		_, err := cms.Delete(ctx, "demo", name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name}, Data: map[string]string{"step": strconv.Itoa(step)}}
	_, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
	}
	return err
}

func injectFault(srv *cachetest.Server, rng *rand.Rand) string {
	switch rng.IntN(3) {
	case 0:
		_ = srv.Compact(srv.ResourceVersion())
		srv.CloseWatches()
		return "expired-rv"
	case 1:
		srv.CloseWatches()
		return "dropped-watch"
	default:
		srv.FailNext(cachetest.VerbWatch, 1, cachetest.TooManyRequests(time.Second))
		srv.CloseWatches()
		return "throttled-429"
	}
}

// settle lets the Reflector catch up with the last writes. After many
// faults it may be in its longest backoff (30 s, up to 60 s with jitter)
// before it relists, so it allows for that.
func settle(ctx context.Context, r *cache.Reflector, srv *cachetest.Server) {
	deadline := time.Now().Add(90 * time.Second)
	for r.LastSyncResourceVersion() != srv.ResourceVersion() && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
}

// summarize prints the faults and how the store compares with the server,
// and fails on any difference.
func summarize(w io.Writer, d cachetest.Divergence, serverObjs, storeObjs int, faults map[string]int) error {
	fmt.Fprintf(w, "faults injected: expired-rv=%d dropped-watch=%d throttled-429=%d\n", faults["expired-rv"], faults["dropped-watch"], faults["throttled-429"])
	fmt.Fprintf(w, "server objects=%d store objects=%d lost=%d phantom=%d stale=%d\n", serverObjs, storeObjs, len(d.Lost), len(d.Phantom), len(d.Stale))
	if !d.Empty() {
		return fmt.Errorf("the store does not match the server: %s", d)
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
	r, store, err := newReflector(restCfg, "cluster")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() { r.RunWithContext(ctx); close(done) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, cfg.syncWait)
	defer syncCancel()
	if err := r.WaitForSync(syncCtx); err != nil {
		cancel()
		<-done
		return fmt.Errorf("initial sync: %w", err)
	}
	// The watching time starts once the store is synced.
	stop := time.AfterFunc(cfg.duration, cancel)
	defer stop.Stop()
	st := newStatus(os.Stdout, r, store)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-done:
			st.final()
			return nil
		case <-t.C:
			st.tick()
		}
	}
}
