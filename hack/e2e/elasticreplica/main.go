// Command elasticreplica is one replica of a sharded controller, run as a
// process of its own by the end-to-end test TestElasticRing
// (e2e/elastic_test.go): it watches the ConfigMaps of one namespace
// through a ring informer (--mode=elastic: github.com/kreflector/cache/ring)
// or through a static i-of-n sharded informer (--mode=static: replica
// --replica of --of, cache.ReplicaShard), or through one unsharded
// informer (--mode=plain: a controller without sharding), and records
// what it handles. --reshard-by-relist sets the ring's
// Config.ReshardByRelist (each change relists the whole new share).
//
// It writes one JSON object per line to --log (see record), every time
// stamp from the wall clock (Unix nanoseconds), so that the logs of
// replicas on one machine share a clock:
//
//   - "start": the process runs (lease name, shard, settings);
//   - "open" / "close": the objects of shard start or stop being handled
//     (elastic: each Config.OnHandlingChange; static: its shard once the
//     informer has synced, and at exit);
//   - "call": each handler call (event add/update/delete, object uid, name
//     and resourceVersion), at its start;
//   - "status": every --status-every (members, planned and handled
//     buckets, formed, fenced, last error);
//   - "cache": on SIGUSR1, the name and resourceVersion of every object in
//     the informer's cache;
//   - "stats": every --stats-every (if set) and once more after the
//     informer has stopped, what it received: its Stats (items listed,
//     lists by cause, events by type, reshards merged and fallen back)
//     and what its ListerWatcher returned (LIST items, WatchList objects,
//     watch events by type, response bytes; see costs.go);
//   - "exit": it has left (elastic: the ring's Run returned) and stops.
//
// SIGTERM or SIGINT ends it gracefully: the ring leaves (stops handling,
// records that it holds nothing, deletes its Lease) and the informer stops.
//
// It connects with --host, --token and --ca (or --kubeconfig); the test
// points --host at a black-holing proxy to cut one replica off.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientgocache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/ring"
	"github.com/kreflector/cache/shard"
)

// record is one line of the log; each kind sets the fields it needs.
type record struct {
	T    int64  `json:"t"`
	Kind string `json:"kind"`
	// open, close, start: the shard concerned.
	Shard string `json:"shard,omitempty"`
	// call: the event and the object.
	Event string `json:"event,omitempty"`
	UID   string `json:"uid,omitempty"`
	Name  string `json:"name,omitempty"`
	RV    string `json:"rv,omitempty"`
	// status.
	Members  int    `json:"members,omitempty"`
	Planned  int    `json:"planned,omitempty"`
	Handling int    `json:"handling,omitempty"`
	Formed   bool   `json:"formed,omitempty"`
	Fenced   bool   `json:"fenced,omitempty"`
	Error    string `json:"error,omitempty"`
	// cache: "name rv" of each cached object, sorted.
	Keys []string `json:"keys,omitempty"`
	// start: this replica's Lease (elastic) and settings.
	Lease    string `json:"lease,omitempty"`
	Settings string `json:"settings,omitempty"`
	// stats: what the informer received so far.
	Stats *statsRecord `json:"stats,omitempty"`
}

// logger writes records, one write per line, so that a SIGKILL loses at
// most the line being written.
type logger struct {
	mu sync.Mutex
	f  *os.File
}

func (l *logger) write(r record) {
	if r.T == 0 {
		r.T = time.Now().UnixNano()
	}
	b, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.Write(append(b, '\n')); err != nil {
		fmt.Fprintln(os.Stderr, "elasticreplica: writing the log:", err)
		os.Exit(1)
	}
}

type options struct {
	host, token, ca, kubeconfig string
	namespace                   string
	leaseNamespace, ringName    string
	identity                    string
	mode                        string
	replica, of                 int
	leaseDuration, renewDeadline, retryPeriod,
	statusEvery time.Duration
	buckets int
	logPath string
	// reshardByRelist sets ring.Config.ReshardByRelist; statsEvery is how
	// often to log a "stats" record (0: only at exit).
	reshardByRelist bool
	statsEvery      time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.host, "host", "", "kube-apiserver URL (with --token and --ca), e.g. https://127.0.0.1:6443")
	flag.StringVar(&o.token, "token", "", "bearer token")
	flag.StringVar(&o.ca, "ca", "", "CA certificate file of the server")
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig, instead of --host, --token and --ca")
	flag.StringVar(&o.namespace, "namespace", "", "namespace of the ConfigMaps to watch")
	flag.StringVar(&o.leaseNamespace, "lease-namespace", "", "namespace of the ring's Leases (elastic)")
	flag.StringVar(&o.ringName, "ring", "", "ring name (elastic)")
	flag.StringVar(&o.identity, "identity", "", "this replica's identity")
	flag.StringVar(&o.mode, "mode", "elastic", "elastic (a ring member), static (--replica of --of) or plain (unsharded)")
	flag.IntVar(&o.replica, "replica", 0, "static: this replica's index")
	flag.IntVar(&o.of, "of", 0, "static: the number of replicas")
	flag.DurationVar(&o.leaseDuration, "lease-duration", ring.DefaultLeaseDuration, "elastic: Config.LeaseDuration")
	flag.DurationVar(&o.renewDeadline, "renew-deadline", ring.DefaultRenewDeadline, "elastic: Config.RenewDeadline")
	flag.DurationVar(&o.retryPeriod, "retry-period", ring.DefaultRetryPeriod, "elastic: Config.RetryPeriod")
	flag.IntVar(&o.buckets, "buckets", ring.DefaultBuckets, "elastic: Config.Buckets")
	flag.DurationVar(&o.statusEvery, "status-every", 250*time.Millisecond, "how often to log the status")
	flag.StringVar(&o.logPath, "log", "", "file to write the JSON lines to")
	flag.BoolVar(&o.reshardByRelist, "reshard-by-relist", false, "elastic: Config.ReshardByRelist (relist the whole share at each change)")
	flag.DurationVar(&o.statsEvery, "stats-every", 0, "how often to log the informer's stats (0: only at exit)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "elasticreplica:", err)
		os.Exit(1)
	}
}

func restConfig(o options) (*rest.Config, error) {
	if o.kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags(o.host, o.kubeconfig)
	}
	if o.host == "" || o.token == "" || o.ca == "" {
		return nil, fmt.Errorf("want --kubeconfig, or --host, --token and --ca")
	}
	return &rest.Config{Host: o.host, BearerToken: o.token, TLSClientConfig: rest.TLSClientConfig{CAFile: o.ca}}, nil
}

func run(o options) error {
	if o.namespace == "" || o.logPath == "" {
		return fmt.Errorf("--namespace and --log are required")
	}
	cfg, err := restConfig(o)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 50, 100
	cfg.Wrap(countBytes(&received))
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(o.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	log := &logger{f: f}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// SIGUSR1 asks for the cache; caught from the start, since by default
	// it would end the process.
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	lw := countReceived(cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", o.namespace, fields.Everything()), &received)
	switch o.mode {
	case "elastic":
		return runElastic(ctx, o, cs, lw, log, usr1)
	case "static":
		return runStatic(ctx, o, lw, log, usr1)
	case "plain":
		return runPlain(ctx, o, lw, log, usr1)
	}
	return fmt.Errorf("--mode %q: want elastic, static or plain", o.mode)
}

// handler logs each call while on is set.
type handler struct {
	log *logger
	on  atomic.Bool
}

func (h *handler) call(event string, obj interface{}) {
	if !h.on.Load() {
		return
	}
	t := time.Now().UnixNano()
	if d, ok := obj.(clientgocache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	h.log.write(record{T: t, Kind: "call", Event: event, UID: string(m.GetUID()), Name: m.GetName(), RV: m.GetResourceVersion()})
}

func (h *handler) funcs() clientgocache.ResourceEventHandlerFuncs {
	return clientgocache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { h.call("add", obj) },
		UpdateFunc: func(_, obj interface{}) { h.call("update", obj) },
		DeleteFunc: func(obj interface{}) { h.call("delete", obj) },
	}
}

func runElastic(ctx context.Context, o options, cs *kubernetes.Clientset, lw clientgocache.ListerWatcher, log *logger, usr1 <-chan os.Signal) error {
	if o.leaseNamespace == "" || o.ringName == "" || o.identity == "" {
		return fmt.Errorf("elastic: --lease-namespace, --ring and --identity are required")
	}
	r, err := ring.New(ring.Config{
		Client: cs.CoordinationV1(), Namespace: o.leaseNamespace, Name: o.ringName, Identity: o.identity,
		LeaseDuration: o.leaseDuration, RenewDeadline: o.renewDeadline, RetryPeriod: o.retryPeriod, Buckets: o.buckets,
		ReshardByRelist: o.reshardByRelist,
		OnHandlingChange: func(opened bool, s shard.Shard) {
			kind := "close"
			if opened {
				kind = "open"
			}
			log.write(record{Kind: kind, Shard: s.String()})
		},
	})
	if err != nil {
		return err
	}
	log.write(record{Kind: "start", Lease: r.LeaseName(), Settings: fmt.Sprintf("elastic lease %v renew %v retry %v buckets %d", o.leaseDuration, o.renewDeadline, o.retryPeriod, o.buckets)})
	inf := r.NewInformer(lw, &corev1.ConfigMap{}, 0, clientgocache.Indexers{}).(*ring.Informer)
	h := &handler{log: log}
	h.on.Store(true)
	if _, err := inf.AddEventHandler(h.funcs()); err != nil {
		return err
	}
	stats := startStats(ctx, o.statsEvery, log, inf)
	var wg sync.WaitGroup
	wg.Go(func() { inf.RunWithContext(ctx) })
	wg.Go(func() {
		reportStatus(ctx, o.statusEvery, log, inf, usr1, func() record {
			s := r.Status()
			rec := record{Members: s.Members, Planned: s.Planned, Handling: s.Handling, Formed: s.Formed(), Fenced: s.Fenced}
			if s.LastError != nil {
				rec.Error = s.LastErrorAt.Format(time.RFC3339Nano) + " " + s.LastError.Error()
			}
			return rec
		})
	})
	err = r.Run(ctx)
	wg.Wait()
	stats.final()
	log.write(record{Kind: "exit", Error: errString(err)})
	return err
}

func runStatic(ctx context.Context, o options, lw clientgocache.ListerWatcher, log *logger, usr1 <-chan os.Signal) error {
	s, err := cache.ReplicaShard(o.replica, o.of)
	if err != nil {
		return err
	}
	log.write(record{Kind: "start", Shard: s.String(), Settings: fmt.Sprintf("static %d of %d", o.replica, o.of)})
	inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	// Filtering locally too: on a server ignoring the selector each
	// replica still handles its shard alone.
	if err := inf.(cache.ReflectorConfigurable).SetReflectorOptions(cache.ReflectorOptions{Shard: &s, ShardFilterLocally: true}); err != nil {
		return err
	}
	h := &handler{log: log}
	h.on.Store(true)
	if _, err := inf.AddEventHandler(h.funcs()); err != nil {
		return err
	}
	stats := startStats(ctx, o.statsEvery, log, inf.(statser))
	var wg sync.WaitGroup
	wg.Go(func() { inf.RunWithContext(ctx) })
	synced := atomic.Bool{}
	wg.Go(func() {
		if clientgocache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			synced.Store(true)
			log.write(record{Kind: "open", Shard: s.String()})
		}
	})
	wg.Go(func() {
		reportStatus(ctx, o.statusEvery, log, inf, usr1, func() record {
			return record{Formed: synced.Load()}
		})
	})
	<-ctx.Done()
	// Stop handling first, as a process that exits does.
	h.on.Store(false)
	if synced.Load() {
		log.write(record{Kind: "close", Shard: s.String()})
	}
	wg.Wait()
	stats.final()
	log.write(record{Kind: "exit"})
	return nil
}

// reportStatus logs status() every period, and the cache on each
// signal from usr1, until ctx ends.
func reportStatus(ctx context.Context, period time.Duration, log *logger, inf clientgocache.SharedIndexInformer, usr1 <-chan os.Signal, status func() record) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			rec := status()
			rec.Kind = "status"
			log.write(rec)
		case <-usr1:
			log.write(record{Kind: "cache", Keys: cacheKeys(inf)})
		}
	}
}

// cacheKeys returns "name rv" for every object in inf's cache, sorted;
// "-" alone for an empty cache, so that the line says so.
func cacheKeys(inf clientgocache.SharedIndexInformer) []string {
	var out []string
	for _, obj := range inf.GetStore().List() {
		if m, err := meta.Accessor(obj); err == nil {
			out = append(out, m.GetName()+" "+m.GetResourceVersion())
		}
	}
	if len(out) == 0 {
		return []string{"-"}
	}
	sort.Strings(out)
	return out
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
