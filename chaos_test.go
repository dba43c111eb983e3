package cache

import (
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/kreflector/cache/cachetest"
)

// The chaos suite: seeded random workloads against cachetest's server
// while random faults of every kind are injected, with our Reflector
// feeding a store; afterwards the store must equal the server exactly.
//
//	go test -run TestChaos -v .                                  # the short set CI runs
//	go test -run TestChaos -v -chaos.seeds=200 -chaos.ops=1000 . # a long run
//	go test -run 'TestChaos/store/seed=17$' -v .                 # one seed again
var (
	chaosSeeds = flag.Int("chaos.seeds", 10, "seeds per configuration in TestChaos")
	chaosOps   = flag.Int("chaos.ops", 300, "workload writes per seed in TestChaos")
)

// Bounds, in fake time, for the reflector to converge once faults stop,
// and for how long it must then stay converged.
const (
	chaosSettleLimit = 30 * time.Minute
	chaosStableFor   = 10 * time.Minute
)

type chaosConfig struct {
	name string
	// watchList: the Reflector asks for WatchList streams.
	watchList bool
	// refuseWatchList: the server is one without WatchList.
	refuseWatchList bool
	// fifo: the Reflector feeds client-go's DeltaFIFO instead of our store.
	fifo bool
}

var chaosConfigs = []chaosConfig{
	{name: "store"},
	{name: "deltafifo", fifo: true},
	{name: "watchlist", watchList: true},
	{name: "watchlist-refused", watchList: true, refuseWatchList: true},
}

// chaosRun is what one seed did.
type chaosRun struct {
	writes      workload
	compactions int
	stats       cachetest.Stats
	settle      time.Duration
	divergence  cachetest.Divergence
}

func TestChaos(t *testing.T) {
	for _, cfg := range chaosConfigs {
		t.Run(cfg.name, func(t *testing.T) {
			var fig chaosFigures
			for seed := uint64(1); seed <= uint64(*chaosSeeds); seed++ {
				t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) { fig.add(runChaos(t, cfg, seed)) })
				})
			}
			t.Logf("%s: %s", cfg.name, fig.String())
		})
	}
}

// runChaos runs one seed: workload and faults, then convergence checks.
func runChaos(t *testing.T, cfg chaosConfig, seed uint64) chaosRun {
	rng := rand.New(rand.NewPCG(seed, 0x6b7265666c))
	srv := cachetest.NewServer(cachetest.Options{
		HistoryLimit:     25 + rng.IntN(200),
		CacheLag:         rng.IntN(4),
		WatchBuffer:      16 + rng.IntN(64),
		DisableWatchList: cfg.refuseWatchList,
	})
	defer srv.Close()
	cms := srv.Resource(cachetest.Type{Resource: "configmaps", Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}})
	var sk sink = storeSink{NewStore(MetaNamespaceKeyFunc)}
	if cfg.fifo {
		sk = newFIFOSink()
	}
	quiet := logr.Discard()
	ctx := klog.NewContext(t.Context(), quiet)
	r := NewReflectorWithOptions(cms, &corev1.ConfigMap{}, sk.store(), ReflectorOptions{
		Name: "chaos", Logger: &quiet, UseWatchList: &cfg.watchList, Rand: rand.New(rand.NewPCG(seed, 1)),
	})
	_, stop := startRunIn(t, ctx, r.RunWithContext)

	run := chaosRun{writes: workload{t: t, rng: rng, cms: cms}}
	run.compactions = drive(rng, srv, &run.writes, *chaosOps)
	srv.ClearFaults()
	run.settle, run.divergence = settle(cms, sk)
	if run.divergence.Empty() {
		checkStaysConverged(t, r, cms, sk)
	}
	stop()
	sk.close()
	if fs, ok := sk.(*fifoSink); ok && fs.err != nil {
		t.Errorf("DeltaFIFO consumer: %v", fs.err)
	}
	run.stats = srv.Stats()
	if !run.divergence.Empty() {
		t.Errorf("seed %d: no convergence within %v after the faults stopped: %v", seed, chaosSettleLimit, run.divergence)
	}
	if run.stats.EarlyRetries != 0 {
		t.Errorf("seed %d: %d calls came before the Retry-After of a 429", seed, run.stats.EarlyRetries)
	}
	return run
}

// drive runs ops writes, sometimes in bursts, with random pauses and a
// fault injected now and then; it returns how many compactions it made.
func drive(rng *rand.Rand, srv *cachetest.Server, w *workload, ops int) int {
	compactions := 0
	for done := 0; done < ops; {
		n := 1
		if rng.IntN(20) == 0 {
			n = 1 + rng.IntN(80) // a burst: slow consumers lose their watch
		}
		for range min(n, ops-done) {
			w.step()
		}
		done += n
		if rng.IntN(100) < 25 && injectFault(rng, srv) == "compact" {
			compactions++
		}
		time.Sleep(time.Duration(rng.IntN(4000)) * time.Millisecond)
	}
	return compactions
}

// settle waits, in fake time, until the sink holds exactly the server's
// objects, and returns how long that took and the last divergence seen.
func settle(cms *cachetest.Resource, sk sink) (time.Duration, cachetest.Divergence) {
	start := time.Now()
	for {
		synctest.Wait()
		objs, _ := cms.Objects()
		d := cachetest.Compare(objs, sk.contents())
		if d.Empty() || time.Since(start) >= chaosSettleLimit {
			return time.Since(start), d
		}
		time.Sleep(time.Second)
	}
}

// checkStaysConverged waits a while longer and checks that the sink still
// matches the server and the Reflector has reached its resourceVersion.
func checkStaysConverged(t *testing.T, r *Reflector, cms *cachetest.Resource, sk sink) {
	time.Sleep(chaosStableFor)
	synctest.Wait()
	objs, rv := cms.Objects()
	if d := cachetest.Compare(objs, sk.contents()); !d.Empty() {
		t.Errorf("store diverged again after converging: %v", d)
	}
	// Bookmarks bring the Reflector to the newest resourceVersion.
	if got := r.LastSyncResourceVersion(); got != rv {
		t.Errorf("LastSyncResourceVersion %s, server at %s", got, rv)
	}
}

// chaosFigures sums the runs of one configuration.
type chaosFigures struct {
	seeds, creates, updates, deletes int
	faults                           map[string]int
	relists, watches, expired        int
	slowClosed, bookmarks, early     int
	slowestSettle                    time.Duration
	lost, phantom, stale             int
}

func (f *chaosFigures) add(r chaosRun) {
	if f.faults == nil {
		f.faults = map[string]int{}
	}
	f.seeds++
	f.creates += r.writes.creates
	f.updates += r.writes.updates
	f.deletes += r.writes.deletes
	for k, n := range r.stats.Faults {
		f.faults[string(k)] += n
	}
	f.faults["Compaction"] += r.compactions
	f.relists += r.stats.Lists + r.stats.WatchLists
	f.watches += r.stats.Calls[cachetest.VerbWatch]
	f.expired += r.stats.Expired
	f.slowClosed += r.stats.SlowWatchesClosed
	f.bookmarks += r.stats.Bookmarks
	f.early += r.stats.EarlyRetries
	f.slowestSettle = max(f.slowestSettle, r.settle)
	f.lost += len(r.divergence.Lost)
	f.phantom += len(r.divergence.Phantom)
	f.stale += len(r.divergence.Stale)
}

func (f *chaosFigures) String() string {
	var faults []string
	total := 0
	for _, k := range slices.Sorted(maps.Keys(f.faults)) {
		faults = append(faults, fmt.Sprintf("%s=%d", k, f.faults[k]))
		total += f.faults[k]
	}
	return fmt.Sprintf("%d seeds: %d writes (%d creates, %d updates, %d deletes); %d faults (%s); "+
		"%d relists, %d watch requests, %d 410 answers, %d slow watches closed, %d bookmarks, %d early retries; "+
		"slowest convergence %v of fake time; objects lost %d, phantom %d, stale %d",
		f.seeds, f.creates+f.updates+f.deletes, f.creates, f.updates, f.deletes, total, strings.Join(faults, " "),
		f.relists, f.watches, f.expired, f.slowClosed, f.bookmarks, f.early,
		f.slowestSettle, f.lost, f.phantom, f.stale)
}
