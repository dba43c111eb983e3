// Command metrics serves a Reflector's metrics on a local port: in
// Prometheus' text format on /metrics and through expvar on /debug/vars.
//
// It starts the embedded test API server (cachetest, over HTTP), runs our
// Reflector over its ConfigMaps through client-go's real Clientset while a
// small workload with injected faults runs, and serves the metrics for
// --duration (or until interrupted). Then it scrapes its own /metrics once,
// prints the reflector's series, stops the Reflector and shows that its
// series are gone.
package main

import (
	"bufio"
	"context"
	"errors"
	"expvar"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/cachetest"
)

type config struct {
	listen   string
	duration time.Duration
	objects  int
}

func main() {
	var cfg config
	flag.StringVar(&cfg.listen, "listen", "127.0.0.1:9090", "address to serve /metrics and /debug/vars on")
	flag.DurationVar(&cfg.duration, "duration", 30*time.Second, "how long to run the workload and serve")
	flag.IntVar(&cfg.objects, "objects", 50, "how many ConfigMaps the workload keeps around")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: metrics [flags]\n\nRuns the kreflector Reflector on the embedded test API server and serves its\nmetrics in Prometheus text format (/metrics) and through expvar (/debug/vars).\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if cfg.duration <= 0 || cfg.objects < 1 {
		fmt.Fprintln(os.Stderr, "metrics: --duration and --objects must be positive")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "metrics:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config, out io.Writer) error {
	srv := cachetest.NewServer(cachetest.Options{BookmarkInterval: 5 * time.Second})
	cms := srv.Resource(cachetest.Type{Resource: "configmaps", Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}})
	srv.Start()
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(srv.RESTConfig())
	if err != nil {
		return err
	}
	reg := newRegistry()
	expvar.Publish("reflectors", expvar.Func(reg.expvarValue))
	addr, stopServing, err := serve(cfg.listen, reg)
	if err != nil {
		return err
	}
	defer stopServing()
	fmt.Fprintf(out, "serving http://%s/metrics and http://%s/debug/vars for %v\n", addr, addr, cfg.duration)

	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", metav1.NamespaceAll, fields.Everything())
	r := cache.NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cache.NewStore(cache.MetaNamespaceKeyFunc), cache.ReflectorOptions{Name: "configmaps", Metrics: reg})
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { r.RunWithContext(rctx); close(done) }()
	defer func() { cancel(); <-done }()
	if err := r.WaitForSync(ctx); err != nil {
		return err
	}
	if err := drive(ctx, cms, cfg); err != nil {
		return err
	}
	waitCaughtUp(ctx, r, srv)
	fmt.Fprintln(out, "a scrape of /metrics while the reflector runs:")
	running, err := printScrape(out, addr, []string{"reflector_lists_total", "reflector_watch_lists_total", "reflector_watch_ends_total", "reflector_events_total", "reflector_last_resource_version"})
	if err != nil {
		return err
	}
	cancel()
	<-done
	fmt.Fprintln(out, "after the reflector's Run returned:")
	left, err := printScrape(out, addr, []string{"reflector_"})
	switch {
	case err != nil:
		return err
	case running == 0 || left != 0:
		return fmt.Errorf("want series while the reflector runs and none after, got %d and %d", running, left)
	}
	fmt.Fprintf(out, "OK: %d series served while the reflector ran, all deleted when it stopped\n", running)
	return nil
}

// serve serves the registry on listen until stop is called; stop waits
// for the server to shut down.
func serve(listen string, reg *registry) (addr string, stop func(), err error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return "", nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_ = reg.writePrometheus(w)
	})
	mux.Handle("/debug/vars", expvar.Handler())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() { _ = hs.Serve(ln); close(served) }()
	return ln.Addr().String(), func() { _ = hs.Close(); <-served }, nil
}

// drive writes to the server for cfg.duration, injecting a fault every
// second: a dropped watch, a compaction (so the next watch gets 410), or
// a 429 on the next watch.
func drive(ctx context.Context, cms *cachetest.Resource, cfg config) error {
	srv := cms.Server()
	deadline := time.Now().Add(cfg.duration)
	for step := 0; time.Now().Before(deadline) && ctx.Err() == nil; step++ {
		name := fmt.Sprintf("cm-%d", step%cfg.objects)
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name}, Data: map[string]string{"step": fmt.Sprint(step)}}
		var err error
		if step/cfg.objects%2 == 0 {
			_, err = cms.Create(ctx, obj, metav1.CreateOptions{})
		} else {
			_, err = cms.Delete(ctx, "demo", name, metav1.DeleteOptions{})
		}
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("workload step %d: %w", step, err)
		}
		switch step % 300 {
		case 100:
			srv.CloseWatches()
		case 200:
			_ = srv.Compact(srv.ResourceVersion())
			srv.CloseWatches()
		case 299:
			srv.FailNext(cachetest.VerbWatch, 1, cachetest.TooManyRequests(time.Second))
			srv.CloseWatches()
		}
		time.Sleep(3 * time.Millisecond)
	}
	return nil
}

// waitCaughtUp gives the Reflector up to a minute to reach the server's
// newest resourceVersion (it may be backing off after a fault).
func waitCaughtUp(ctx context.Context, r *cache.Reflector, srv *cachetest.Server) {
	deadline := time.Now().Add(time.Minute)
	for r.LastSyncResourceVersion() != srv.ResourceVersion() && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
}

// printScrape GETs /metrics from addr and prints the samples (not the
// HELP and TYPE lines) whose names start with one of prefixes, leaving
// out those at zero; it ends with how many series it found in all, which
// it returns.
func printScrape(out io.Writer, addr string, prefixes []string) (int, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, errors.New("scrape: " + resp.Status)
	}
	n := 0
	for sc := bufio.NewScanner(resp.Body); sc.Scan(); {
		line := sc.Text()
		for _, p := range prefixes {
			if strings.HasPrefix(line, p) {
				if !strings.HasSuffix(line, " 0") {
					fmt.Fprintln(out, "  "+line)
				}
				n++
				break
			}
		}
	}
	fmt.Fprintf(out, "  (%d series, those at zero not shown)\n", n)
	return n, nil
}
