package cache

import (
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgofeatures "k8s.io/client-go/features"
	clientgocache "k8s.io/client-go/tools/cache"
)

// informerScenario is one script both SharedIndexInformers run.
type informerScenario struct {
	name          string
	watchList     bool
	lists         []listReply
	defaultResync time.Duration
	transform     bool
	// handlers are added before Run, with their resync periods (nil: the
	// informer's default).
	handlers []string
	resyncs  map[string]*time.Duration
	steps    func(d *informerDriver)
	// sharedOnly: the steps add or remove handlers, which the Controller
	// of NewInformer cannot.
	sharedOnly bool
}

// informerConstructor is NewSharedIndexInformerWithOptions, client-go's or ours.
type informerConstructor func(lw clientgocache.ListerWatcher, obj runtime.Object, o SharedIndexInformerOptions) SharedIndexInformer

// playInformer runs sc on one informer and returns, per handler, its calls
// in canonical order followed by whether its registration had synced.
func playInformer(t *testing.T, sc informerScenario, newInformer informerConstructor) map[string][]string {
	out := map[string][]string{}
	synctest.Test(t, func(t *testing.T) {
		lw := &scriptLW{lists: slices.Clone(sc.lists), noWL: !sc.watchList}
		inf := newInformer(lw, &corev1.ConfigMap{}, SharedIndexInformerOptions{
			ResyncPeriod: sc.defaultResync,
			Indexers:     Indexers{NamespaceIndex: MetaNamespaceIndexFunc},
		})
		if sc.transform {
			if err := inf.SetTransform(markTransformed); err != nil {
				t.Fatal(err)
			}
		}
		d := &informerDriver{t: t, lw: lw, inf: inf, log: &handlerLog{}, regs: map[string]ResourceEventHandlerRegistration{}}
		for _, h := range sc.handlers {
			d.add(h, sc.resyncs[h])
		}
		stop := runInformer(t, inf)
		synctest.Wait()
		sc.steps(d)
		for name, reg := range d.regs {
			out[name] = append(d.log.canonical(name), "synced="+boolString(reg.HasSynced()))
		}
		keys := inf.GetIndexer().ListKeys()
		slices.Sort(keys)
		out["informer"] = []string{"synced=" + boolString(inf.HasSynced()), "rv=" + inf.LastSyncResourceVersion(),
			"storeRV=" + inf.GetIndexer().LastStoreSyncResourceVersion(), "keys=" + strings.Join(keys, ",")}
		stop()
		if !inf.IsStopped() {
			t.Error("IsStopped is false after Run returned")
		}
	})
	return out
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func clientGoInformer(lw clientgocache.ListerWatcher, obj runtime.Object, o SharedIndexInformerOptions) SharedIndexInformer {
	return clientgocache.NewSharedIndexInformerWithOptions(lw, obj, o)
}

func ourInformer(lw clientgocache.ListerWatcher, obj runtime.Object, o SharedIndexInformerOptions) SharedIndexInformer {
	return NewSharedIndexInformerWithOptions(lw, obj, o)
}

// Objects and replies the scenarios share.
var (
	two     = []string{"h1", "h2"}
	abc     = listReply{list: cmList("10", "", cm("a", "5"), cm("b", "6"), cm("c", "7"))}
	relist  = listReply{list: cmList("20", "", cm("a", "5"), cm("c", "15"), cm("d", "16"))}
	expired = errEvent(expiredStatus())
)

// informerScenarios covers what must reach handlers exactly as in client-go.
func informerScenarios() []informerScenario {
	return slices.Concat(syncScenarios(), resyncScenarios(), handlerScenarios())
}

// syncScenarios: lists, WatchLists, watch events, relists, transform.
func syncScenarios() []informerScenario {
	return []informerScenario{
		{name: "list then watch events", handlers: two, lists: []listReply{abc},
			steps: func(d *informerDriver) {
				d.send(ev(watch.Added, cm("e", "11")), ev(watch.Modified, cm("a", "12")), ev(watch.Deleted, cm("b", "13")), bookmark("14", false))
				d.send(ev(watch.Modified, cm("e", "15")))
			}},
		{name: "watchlist initial events then watch", watchList: true, handlers: two,
			steps: func(d *informerDriver) {
				d.send(ev(watch.Added, cm("a", "5")), ev(watch.Added, cm("b", "7")), bookmark("10", true))
				d.send(ev(watch.Modified, cm("a", "11")), ev(watch.Deleted, cm("b", "12")))
			}},
		// One object in the second WatchList: client-go hands a WatchList's
		// objects to Replace in map order (ours: arrival order), a Reflector
		// difference docs/compatibility.md lists.
		{name: "watchlist again after 410", watchList: true, handlers: two,
			steps: func(d *informerDriver) {
				d.send(ev(watch.Added, cm("a", "5")), ev(watch.Added, cm("b", "7")), ev(watch.Added, cm("c", "8")), bookmark("10", true))
				d.send(ev(watch.Modified, cm("a", "11")), bookmark("12", false))
				d.send(expired)
				d.send(ev(watch.Added, cm("a", "11")), bookmark("20", true))
				d.send(ev(watch.Added, cm("d", "21")))
			}},
		{name: "410 relist gives tombstones and same-RV updates", handlers: two, lists: []listReply{abc, relist},
			steps: func(d *informerDriver) {
				d.send(ev(watch.Modified, cm("c", "11")))
				d.send(expired)
				d.send(ev(watch.Added, cm("e", "21")))
			}},
		{name: "transform", transform: true, handlers: two, lists: []listReply{abc, relist},
			steps: func(d *informerDriver) {
				d.send(ev(watch.Added, cm("e", "11")), ev(watch.Modified, cm("a", "12")))
				d.send(expired)
			}},
	}
}

// resyncScenarios: resync periods of the informer and of handlers.
func resyncScenarios() []informerScenario {
	return []informerScenario{
		{name: "resync with ShouldResync: two periods and none", lists: []listReply{abc}, defaultResync: time.Minute,
			handlers: []string{"h10s", "h25s", "none"},
			resyncs:  map[string]*time.Duration{"h10s": period(10 * time.Second), "h25s": period(25 * time.Second), "none": period(0)},
			steps: func(d *informerDriver) {
				d.sleep(31 * time.Second)
				d.send(ev(watch.Modified, cm("a", "11")))
				d.sleep(30 * time.Second)
			}},
		{name: "resync from the informer default", lists: []listReply{abc}, defaultResync: 10 * time.Second,
			handlers: []string{"default", "none"}, resyncs: map[string]*time.Duration{"none": period(0)},
			steps: func(d *informerDriver) {
				d.sleep(25 * time.Second)
			}},
		{name: "relist after resyncs reaches only handlers due", lists: []listReply{abc, relist}, defaultResync: time.Minute,
			handlers: []string{"h10s", "none"}, resyncs: map[string]*time.Duration{"h10s": period(10 * time.Second), "none": period(0)},
			steps: func(d *informerDriver) {
				d.sleep(12 * time.Second)
				d.send(expired)
			}},
		{name: "handler resyncs need an informer resync period", lists: []listReply{abc},
			handlers: []string{"h10s"}, resyncs: map[string]*time.Duration{"h10s": period(10 * time.Second)},
			steps: func(d *informerDriver) {
				d.sleep(25 * time.Second)
			}},
	}
}

// handlerScenarios: handlers added after sync and removed.
func handlerScenarios() []informerScenario {
	return []informerScenario{
		{name: "handler added after sync and handler removed", handlers: two, sharedOnly: true, lists: []listReply{abc},
			steps: func(d *informerDriver) {
				d.send(ev(watch.Added, cm("e", "11")))
				d.add("late", nil)
				d.settle()
				d.send(ev(watch.Modified, cm("a", "12")))
				d.remove("h1")
				d.send(ev(watch.Deleted, cm("e", "13")))
			}},
		{name: "handler added after sync with resync", lists: []listReply{abc}, defaultResync: 10 * time.Second, sharedOnly: true,
			handlers: []string{"h1"},
			steps: func(d *informerDriver) {
				d.add("late", period(20*time.Second))
				d.add("tooShort", period(time.Second))
				d.sleep(41 * time.Second)
			}},
	}
}

// TestInformerDifferentialWithClientGo runs every scenario through
// client-go's SharedIndexInformer and ours and requires, per handler, the
// same calls in the same order (up to the orders client-go leaves to map
// iteration) and the same HasSynced at the end.
func TestInformerDifferentialWithClientGo(t *testing.T) {
	for _, sc := range informerScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			want := playInformer(t, sc, clientGoInformer)
			got := playInformer(t, sc, ourInformer)
			for name, w := range want {
				t.Logf("%s:\n  %s", name, strings.Join(got[name], "\n  "))
				if !slices.Equal(got[name], w) {
					t.Errorf("%s differs\nclient-go:\n  %s\nours:\n  %s", name, strings.Join(w, "\n  "), strings.Join(got[name], "\n  "))
				}
				if len(w) < 2 {
					t.Errorf("%s: client-go recorded nothing", name)
				}
			}
			if len(got) != len(want) {
				t.Errorf("handlers differ: client-go %d, ours %d", len(want), len(got))
			}
		})
	}
}

// gatesWithout is client-go's feature gates with one feature turned off.
type gatesWithout struct {
	base clientgofeatures.Gates
	off  clientgofeatures.Feature
}

func (g gatesWithout) Enabled(f clientgofeatures.Feature) bool {
	return f != g.off && g.base.Enabled(f)
}

// TestInformerDifferentialUnderFeatureGates repeats the differential
// tests with each of client-go's informer gates turned off in turn: the
// per-object (non-atomic) RealFIFO, one-at-a-time pops, and pops that hold
// the queue's lock. Both informers read the same gates.
func TestInformerDifferentialUnderFeatureGates(t *testing.T) {
	base := clientgofeatures.FeatureGates()
	defer clientgofeatures.ReplaceFeatureGates(base)
	for _, f := range []clientgofeatures.Feature{clientgofeatures.AtomicFIFO, clientgofeatures.InOrderInformersBatchProcess, clientgofeatures.UnlockWhileProcessingFIFO} {
		t.Run(string(f)+"=false", func(t *testing.T) {
			clientgofeatures.ReplaceFeatureGates(gatesWithout{base: base, off: f})
			defer clientgofeatures.ReplaceFeatureGates(base)
			TestInformerDifferentialWithClientGo(t)
			TestControllerDifferentialWithClientGo(t)
		})
	}
}
