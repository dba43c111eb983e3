package cache

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache/cachetest"
)

// fakeMetrics is a ReflectorMetricsProvider keeping every series in a map keyed
// "reflector/metric{label}". It fails the test on a label outside the
// metric's fixed set.
type fakeMetrics struct {
	t       *testing.T
	mu      sync.Mutex
	values  map[string]float64
	opened  []string
	deleted []string
}

type fakeSeries struct {
	m   *fakeMetrics
	key string
}

func (s fakeSeries) Add(d float64) { s.m.mu.Lock(); s.m.values[s.key] += d; s.m.mu.Unlock() }
func (s fakeSeries) Set(v float64) { s.m.mu.Lock(); s.m.values[s.key] = v; s.m.mu.Unlock() }

type fakeRun struct {
	m    *fakeMetrics
	name string
}

func newFakeMetrics(t *testing.T) *fakeMetrics {
	return &fakeMetrics{t: t, values: map[string]float64{}}
}

func (m *fakeMetrics) NewReflectorMetrics(name string) ReflectorMetrics {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.opened = append(m.opened, name)
	return fakeRun{m: m, name: name}
}

func (r fakeRun) Counter(metric, label string) CounterAdder {
	i := slices.IndexFunc(MetricDescs, func(d MetricDesc) bool { return d.Name == metric })
	if i < 0 || MetricDescs[i].Kind != Counter || (label != "" || MetricDescs[i].Label != "") && !slices.Contains(MetricDescs[i].LabelValues, label) {
		r.m.t.Errorf("counter %s{%s} is not declared", metric, label)
	}
	return fakeSeries{m: r.m, key: fmt.Sprintf("%s/%s{%s}", r.name, metric, label)}
}

func (r fakeRun) Gauge(metric string) GaugeMetric {
	return fakeSeries{m: r.m, key: r.name + "/" + metric}
}

func (r fakeRun) Delete() {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	r.m.deleted = append(r.m.deleted, r.name)
	maps.DeleteFunc(r.m.values, func(k string, _ float64) bool { return len(k) > len(r.name) && k[:len(r.name)+1] == r.name+"/" })
}

func (m *fakeMetrics) get(key string) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.values[key]
}

func (m *fakeMetrics) size() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.values)
}

// statsScript: an initial list; a watch with one event of each kind (and
// an object of the wrong type) ending expired; a relist; a very short
// watch; a relist; a throttled watch open; a watch that stays open.
func statsScript() *scriptLW {
	lw := newScript(
		[]listReply{{list: cmList("10", "", cm("a", "5"))}, {list: cmList("20", "", cm("a", "12"))}, {list: cmList("30", "", cm("a", "12"))}},
		[]watchReply{
			{events: []watch.Event{
				ev(watch.Added, cm("b", "11")), ev(watch.Modified, cm("a", "12")),
				ev(watch.Added, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ResourceVersion: "13"}}),
				bookmark("13", false), ev(watch.Deleted, cm("b", "14")), errEvent(expiredStatus())}},
			{},
			{err: tooManyRequests()},
			{events: []watch.Event{ev(watch.Modified, cm("a", "31"))}, hang: true},
		})
	lw.noWL = true
	return lw
}

func TestStatsCountWhatTheReflectorDid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := statsScript()
		metrics := newFakeMetrics(t)
		opts := ReflectorOptions{Name: "cms", UseWatchList: ptr.To(false), Metrics: metrics}
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), opts)
		_, stop := startReflector(t, r)
		<-lw.drained
		synctest.Wait()
		time.Sleep(time.Minute)
		st := r.Stats()

		wantLists := map[ListCause]uint64{ListInitial: 1, ListExpired: 1, ListShortWatch: 1}
		wantEnds := map[WatchEndCause]uint64{WatchExpired: 1, WatchVeryShort: 1, WatchThrottled: 1}
		wantEvents := map[watch.EventType]uint64{watch.Added: 1, watch.Modified: 2, watch.Deleted: 1, watch.Bookmark: 1, watch.Error: 1, EventDropped: 1}
		checkCounts(t, "Lists", st.Lists, wantLists, ListCauses)
		checkCounts(t, "WatchLists", st.WatchLists, nil, ListCauses)
		checkCounts(t, "WatchEnds", st.WatchEnds, wantEnds, WatchEndCauses)
		checkCounts(t, "Events", st.Events, wantEvents, EventTypes)
		if st.WatchesOpened != 3 || st.ItemsListed != 3 || st.LastListItems != 1 || st.ListPageRetries != 0 {
			t.Errorf("opened=%d itemsListed=%d lastListItems=%d pageRetries=%d", st.WatchesOpened, st.ItemsListed, st.LastListItems, st.ListPageRetries)
		}
		if st.LastResourceVersion != "31" || st.InitialSyncDuration <= 0 || st.SinceLastEvent != time.Minute || st.LastBookmark.IsZero() || st.SinceLastBookmark <= time.Minute {
			t.Errorf("lastRV=%q initialSync=%v sinceEvent=%v lastBookmark=%v sinceBookmark=%v", st.LastResourceVersion, st.InitialSyncDuration, st.SinceLastEvent, st.LastBookmark, st.SinceLastBookmark)
		}

		// The metrics say the same while the reflector runs.
		for cause, n := range wantLists {
			if got := metrics.get("cms/" + MetricLists + "{" + string(cause) + "}"); got != float64(n) {
				t.Errorf("metric lists{%s} = %v, want %d", cause, got, n)
			}
		}
		if got := metrics.get("cms/" + MetricEvents + "{MODIFIED}"); got != 2 {
			t.Errorf("metric events{MODIFIED} = %v", got)
		}
		if got := metrics.get("cms/" + MetricLastResourceVersion); got != 31 {
			t.Errorf("metric last RV = %v", got)
		}
		if got := metrics.get("cms/" + MetricLastEventTimestamp); got != unixSeconds(st.LastEvent) {
			t.Errorf("metric last event time = %v, want %v", got, unixSeconds(st.LastEvent))
		}
		stop()
		if metrics.size() != 0 || !slices.Equal(metrics.deleted, []string{"cms"}) || !slices.Equal(metrics.opened, []string{"cms"}) {
			t.Fatalf("after Run: %d series left, opened %q, deleted %q", metrics.size(), metrics.opened, metrics.deleted)
		}
	})
}

// WatchEnds counts watches that ended and requests to open one that
// failed alike, by cause: a 500 in answer to the request counts as
// internal_error as a 500 on the stream does; WatchesOpened counts only
// the watches that opened.
func TestStatsCountWatchRequestsThatFailed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := newScript([]listReply{{list: cmList("10", "")}, {list: cmList("20", "")}, {list: cmList("30", "")}}, []watchReply{
			{err: apierrors.NewInternalError(errors.New("etcd"))},
			{err: connectionRefused()},
			{events: []watch.Event{errEvent(internalStatus())}},
			{hang: true},
		})
		lw.noWL = true
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), ReflectorOptions{})
		runUntilDrained(t, r, lw)
		st := r.Stats()
		checkCounts(t, "WatchEnds", st.WatchEnds, map[WatchEndCause]uint64{WatchInternalError: 2, WatchUnreachable: 1}, WatchEndCauses)
		if st.WatchesOpened != 2 {
			t.Errorf("WatchesOpened = %d, want 2", st.WatchesOpened)
		}
	})
}

func checkCounts[K comparable](t *testing.T, what string, got, want map[K]uint64, keys []K) {
	t.Helper()
	if len(got) != len(keys) {
		t.Errorf("%s has %d keys, want all %d of the fixed set", what, len(got), len(keys))
	}
	for _, k := range keys {
		if got[k] != want[k] {
			t.Errorf("%s[%v] = %d, want %d", what, k, got[k], want[k])
		}
	}
}

func TestStatsOfWatchListAndItsFallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := newScript([]listReply{{list: cmList("10", "", cm("a", "5"))}},
			[]watchReply{{err: apierrors.NewBadRequest("no")}, {hang: true}})
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), ReflectorOptions{WatchListRefusalMemory: -1})
		runUntilDrained(t, r, lw)
		st := r.Stats()
		checkCounts(t, "WatchLists", st.WatchLists, map[ListCause]uint64{ListInitial: 1}, ListCauses)
		checkCounts(t, "Lists", st.Lists, map[ListCause]uint64{ListWatchListFallback: 1}, ListCauses)
		checkCounts(t, "WatchEnds", st.WatchEnds, map[WatchEndCause]uint64{WatchFailed: 1}, WatchEndCauses)
	})
	synctest.Test(t, func(t *testing.T) {
		lw := newScript(nil, []watchReply{
			{events: []watch.Event{errEvent(expiredStatus())}},
			{events: []watch.Event{ev(watch.Added, cm("a", "5")), ev(watch.Added, cm("b", "6")), bookmark("10", true)}, hang: true}})
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), ReflectorOptions{})
		runUntilDrained(t, r, lw)
		st := r.Stats()
		checkCounts(t, "WatchLists", st.WatchLists, map[ListCause]uint64{ListInitial: 1, ListExpired: 1}, ListCauses)
		checkCounts(t, "Lists", st.Lists, nil, ListCauses)
		if st.ItemsListed != 2 || st.LastListItems != 2 || st.WatchesOpened != 2 || st.LastResourceVersion != "10" {
			t.Errorf("items=%d last=%d opened=%d rv=%q", st.ItemsListed, st.LastListItems, st.WatchesOpened, st.LastResourceVersion)
		}
	})
}

func TestListAndWatchOnItsOwnOpensAndDeletesMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := newScript([]listReply{{list: cmList("1", "")}}, nil)
		lw.noWL = true
		metrics := newFakeMetrics(t)
		r := NewReflectorWithOptions(lw, nil, cachetest.NewRecordingStore(nil), ReflectorOptions{Name: "solo", Metrics: metrics})
		stop := make(chan struct{})
		errc := make(chan error, 1)
		go func() { errc <- r.ListAndWatch(stop) }()
		<-lw.drained
		synctest.Wait()
		if got := metrics.get("solo/" + MetricLists + "{initial}"); got != 1 {
			t.Errorf("lists{initial} = %v while running", got)
		}
		close(stop)
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if metrics.size() != 0 || len(metrics.deleted) != 1 {
			t.Fatalf("series left %d, deleted %q", metrics.size(), metrics.deleted)
		}
	})
}

func TestNilSeriesFromAProviderAreIgnored(t *testing.T) {
	m := openRunMetrics(nilProvider{}, "x")
	m.counter(MetricLists, string(ListInitial)).Add(1)
	m.gauge(MetricLastListItems).Set(1)
	m.close()
}

type nilProvider struct{}

func (nilProvider) NewReflectorMetrics(string) ReflectorMetrics { return nilProvider{} }
func (nilProvider) Counter(string, string) CounterAdder         { return nil }
func (nilProvider) Gauge(string) GaugeMetric                    { return nil }
func (nilProvider) Delete()                                     {}

func TestFixedSetsFitTheTallies(t *testing.T) {
	if len(ReshardFallbacks) != numReshardFallbacks {
		t.Fatalf("numReshardFallbacks is %d, the set has %d", numReshardFallbacks, len(ReshardFallbacks))
	}
	if len(ListCauses) != numListCauses || len(WatchEndCauses) != numWatchEndCauses || len(EventTypes) != numEventTypes {
		t.Fatalf("the size constants (%d, %d, %d) do not match the sets (%d, %d, %d)",
			numListCauses, numWatchEndCauses, numEventTypes, len(ListCauses), len(WatchEndCauses), len(EventTypes))
	}
	idx := map[int]watch.EventType{idxAdded: watch.Added, idxModified: watch.Modified, idxDeleted: watch.Deleted,
		idxBookmark: watch.Bookmark, idxError: watch.Error, idxDropped: EventDropped}
	for i, typ := range idx {
		if EventTypes[i] != typ {
			t.Errorf("index %d counts %s, but EventTypes[%d] is %s", i, typ, i, EventTypes[i])
		}
	}
	var r statsRecorder
	if n := testing.AllocsPerRun(10, func() { r.listed(ListInitial, 1, 1); r.watchEnded(WatchClosed) }); n != 0 {
		t.Fatalf("counting costs %v allocations, want none", n)
	}
}
