package cache

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clientgofeatures "k8s.io/client-go/features"
	"k8s.io/client-go/kubernetes"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache/cachetest"
	"github.com/kreflector/cache/internal/listwatch"
	"github.com/kreflector/cache/internal/podgen"
)

// callLog records handler calls as lines: what, key, resourceVersions.
type callLog struct {
	mu    sync.Mutex
	lines []string
	types map[string]bool
}

func (c *callLog) log(what string, objs ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.types == nil {
		c.types = map[string]bool{}
	}
	line := what
	for _, o := range objs {
		if d, ok := o.(clientgocache.DeletedFinalStateUnknown); ok {
			// A delete seen by a relist, or by the watch before the relist:
			// which one depends on timing, so only the key is compared.
			c.types[fmt.Sprintf("%T", d.Obj)] = true
			c.lines = append(c.lines, "delete "+d.Key)
			return
		}
		c.types[fmt.Sprintf("%T", o)] = true
		p := o.(*corev1.Pod)
		line += fmt.Sprintf(" %s/%s@%s", p.Namespace, p.Name, p.ResourceVersion)
	}
	c.lines = append(c.lines, line)
}

func (c *callLog) OnAdd(obj any, initial bool) { c.log(fmt.Sprintf("add(%v)", initial), obj) }

// OnUpdate leaves out updates that keep the resourceVersion: whether a
// relist's unchanged objects reach a handler depends on whether its
// resync bookkeeping is due, which is timing.
func (c *callLog) OnUpdate(old, obj any) {
	if old.(*corev1.Pod).ResourceVersion != obj.(*corev1.Pod).ResourceVersion {
		c.log("update", old, obj)
	}
}
func (c *callLog) OnDelete(obj any) {
	if p, ok := obj.(*corev1.Pod); ok {
		obj = clientgocache.DeletedFinalStateUnknown{Key: p.Namespace + "/" + p.Name, Obj: p}
	}
	c.log("delete", obj)
}

func (c *callLog) snapshot() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.lines)
}

// TestCompactInformerActsAsTheDecodedOne runs two informers on one
// server, one holding its objects decoded and one compact, through a
// sync, watch events, and a relist after the watch's resourceVersion
// expired: their handlers get the same calls with equal objects, their
// stores and indexes hold equal objects, and the compact one holds bytes.
// With client-go's AtomicFIFO gate on and off (the per-object queue finds
// a relist's deletes in the store, as records).
func TestCompactInformerActsAsTheDecodedOne(t *testing.T) {
	base := clientgofeatures.FeatureGates()
	defer clientgofeatures.ReplaceFeatureGates(base)
	for _, atomicFIFO := range []bool{true, false} {
		for _, watchList := range []bool{false, true} {
			t.Run(fmt.Sprintf("atomic=%v,watchList=%v", atomicFIFO, watchList), func(t *testing.T) {
				clientgofeatures.ReplaceFeatureGates(base)
				if !atomicFIFO {
					clientgofeatures.ReplaceFeatureGates(gatesWithout{base: base, off: clientgofeatures.AtomicFIFO})
				}
				compactBesideDecoded(t, watchList)
			})
		}
	}
}

func compactBesideDecoded(t *testing.T, watchList bool) {
	srv := cachetest.NewServer(cachetest.Options{})
	t.Cleanup(srv.Close)
	pods := srv.Resource(cachetest.Type{Resource: "pods", Object: &corev1.Pod{}, List: &corev1.PodList{}})
	srv.Start()
	ctx := t.Context()
	for i := range 30 {
		p := podgen.Pod(i, 0)
		p.ResourceVersion = ""
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	indexers := Indexers{clientgocache.NamespaceIndex: clientgocache.MetaNamespaceIndexFunc}
	logs := []*callLog{{}, {}}
	var infs []SharedIndexInformer
	for i, o := range []ReflectorOptions{{UseWatchList: &watchList}, {UseWatchList: &watchList, Compact: &CompactOptions{ReadCacheBytes: 5 * decodedSize(4200)}}} {
		inf := NewSharedIndexInformerWith(o)(listwatch.Typed(cs.CoreV1().Pods(""), "pods", nil), &corev1.Pod{}, 0, indexers)
		if _, err := inf.AddEventHandler(logs[i]); err != nil {
			t.Fatal(err)
		}
		infs = append(infs, inf)
		t.Cleanup(runInformer(t, inf))
	}
	waitSame(t, logs, 30)
	for i := range 10 {
		p := podgen.Changed(t, i, 0)
		p.ResourceVersion = ""
		if _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 20; i < 25; i++ {
		p := podgen.Pod(i, 0)
		if _, err := pods.Delete(ctx, p.Namespace, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitSame(t, logs, 45)
	// Expire the watches' position and change objects meanwhile: both relist.
	compactStore := infs[1].GetIndexer().(*guardedIndexer).compact
	keptKey, _ := MetaNamespaceKeyFunc(podgen.Pod(28, 0))
	kept, _ := compactStore.record(keptKey)
	p := podgen.Pod(25, 0)
	if _, err := pods.Delete(ctx, p.Namespace, p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Compact(srv.ResourceVersion()); err != nil {
		t.Fatal(err)
	}
	srv.CloseWatches()
	waitSame(t, logs, 46)
	if !compactRelisted(infs[1]) {
		t.Log("the watch resumed without a relist: nothing to check of records kept by a relist")
	} else if now, _ := compactStore.record(keptKey); now != kept {
		t.Fatal("the relist packed an unchanged object again instead of keeping its record")
	}
	compareInformerStores(t, infs[0].GetIndexer(), infs[1].GetIndexer())
	st := infs[1].(InformerHealthReporter).Stats().Store
	if st == nil || st.Encoded != 24 || st.BytesHeld <= 0 || st.ReadCacheBytes > 5*decodedSize(4200) {
		t.Fatalf("compact store's stats: %+v", st)
	}
	if infs[0].(InformerHealthReporter).Stats().Store != nil {
		t.Fatal("a decoded store reports compact stats")
	}
	if len(logs[1].types) != 1 || !logs[1].types["*v1.Pod"] {
		t.Fatalf("handlers got %v", logs[1].types)
	}
}

// compactRelisted says whether inf's Reflector has listed twice.
func compactRelisted(inf SharedIndexInformer) bool {
	{
		lists := uint64(0)
		st := inf.(InformerHealthReporter).Stats().Reflector
		for _, n := range st.Lists {
			lists += n
		}
		for _, n := range st.WatchLists {
			lists += n
		}
		return lists >= 2
	}
}

// waitSame waits until both logs have at least n calls and agree.
func waitSame(t *testing.T, logs []*callLog, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		a, b := logs[0].snapshot(), logs[1].snapshot()
		if len(a) >= n && slices.Equal(a, b) {
			return
		}
		if time.Now().After(deadline) {
			same := 0
			for same < min(len(a), len(b)) && a[same] == b[same] {
				same++
			}
			t.Fatalf("handler calls differ or are too few (want %d, %d alike):\ndecoded %q\ncompact %q", n, same, a[same:], b[same:])
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-t.Context().Done():
			t.Fatal(context.Cause(t.Context()))
		}
	}
}

func compareInformerStores(t *testing.T, want, got Indexer) {
	t.Helper()
	if w, g := slices.Sorted(slices.Values(want.ListKeys())), slices.Sorted(slices.Values(got.ListKeys())); !slices.Equal(w, g) {
		t.Fatalf("keys %v, want %v", g, w)
	}
	for _, k := range want.ListKeys() {
		w, _, _ := want.GetByKey(k)
		g, _, _ := got.GetByKey(k)
		if !reflect.DeepEqual(w, g) {
			t.Fatalf("%s differs", k)
		}
	}
	w, _ := want.ByIndex(clientgocache.NamespaceIndex, "team-1")
	g, _ := got.ByIndex(clientgocache.NamespaceIndex, "team-1")
	if len(w) == 0 || len(w) != len(g) {
		t.Fatalf("ByIndex: %d objects, want %d", len(g), len(w))
	}
}

// storeMetricsRecorder records compact store metrics by
// "informer/metric".
type storeMetricsRecorder struct{ handlerMetricsRecorder }

func (r *storeMetricsRecorder) NewStoreMetrics(informer string) StoreMetrics {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.open[informer] = true
	return &recordedHandler{r: &r.handlerMetricsRecorder, prefix: informer}
}

// A compact informer's figures reach a StoreMetricsProvider as changes
// are applied, reads included, and its series go when it stops.
func TestCompactStoreMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw, inf := abcInformer()
		rec := &storeMetricsRecorder{handlerMetricsRecorder{values: map[string]float64{}, open: map[string]bool{}}}
		o := ReflectorOptions{Name: "cms", Metrics: rec, Compact: &CompactOptions{ReadCacheBytes: -1}}
		if err := inf.(ReflectorConfigurable).SetReflectorOptions(o); err != nil {
			t.Fatal(err)
		}
		stop := runInformer(t, inf)
		synctest.Wait()
		if _, ok, _ := inf.GetStore().GetByKey("ns/a"); !ok {
			t.Fatal("ns/a not held")
		}
		d := &informerDriver{t: t, lw: lw}
		d.send(ev(watch.Added, cm("d", "11")))
		synctest.Wait()
		st := inf.(InformerHealthReporter).Stats().Store
		for metric, want := range map[string]float64{
			MetricStoreObjects: 4, MetricStoreBytes: float64(st.BytesHeld), MetricStoreReadMisses: float64(st.ReadMisses),
			MetricStoreDecodes: float64(st.Decodes), MetricStoreReadHits: 0,
		} {
			if got := rec.get("cms/" + metric); got != want {
				t.Errorf("%s = %v, want %v", metric, got, want)
			}
		}
		if st.ReadMisses == 0 {
			t.Error("the read was not counted")
		}
		stop()
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if len(rec.open) != 0 {
			t.Errorf("store metrics left after stop: %v", rec.open)
		}
	})
}
