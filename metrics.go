package cache

import (
	"time"

	clientgocache "k8s.io/client-go/tools/cache"
)

// CounterAdder is a monotonically increasing value that takes increments
// of any size. prometheus.Counter and *expvar.Float satisfy it. It is not
// client-go's CounterMetric (whose only method is Inc), hence its own name.
type CounterAdder interface {
	Add(delta float64)
}

// GaugeMetric is a value that goes up and down. prometheus.Gauge and
// *expvar.Float satisfy it. It is client-go's type.
type GaugeMetric = clientgocache.GaugeMetric

// ReflectorMetricsProvider creates the metrics of Reflectors. It is not
// client-go's MetricsProvider (a method per metric, set globally with
// SetReflectorMetricsProvider), hence its own name. The package depends on
// no metrics library: an adapter of a few lines connects it to Prometheus,
// expvar or anything else (see examples/metrics).
//
// Every series is labelled with the reflector's name, the only free label;
// a metric has at most one more label, whose values come from a fixed set
// (MetricDescs lists them), so the number of series is bounded.
type ReflectorMetricsProvider interface {
	// NewReflectorMetrics is called when a Reflector's Run (or a
	// ListAndWatch called on its own) starts, with the reflector's name.
	// The result serves that run only: the Reflector calls its Delete when
	// the run ends, and the provider then drops every series of the run.
	NewReflectorMetrics(reflector string) ReflectorMetrics
}

// ReflectorMetrics hands out the metrics of one Reflector run. Its methods
// are called from the Reflector's goroutine only; the metrics it returns
// must be safe to read from others (a scrape) while they are written.
type ReflectorMetrics interface {
	// Counter returns the counter for metric with the given value of its
	// label ("" for a metric without one). Called once per series, when
	// the run starts; nil means the provider does not want that series.
	Counter(metric string, labelValue string) CounterAdder
	// Gauge returns the gauge for metric, or nil. Called once per series.
	Gauge(metric string) GaugeMetric
	// Delete removes every series of this run; nothing is written after.
	Delete()
}

// Metric names. Durations are in seconds and times are Unix seconds.
const (
	MetricLists                 = "reflector_lists_total"
	MetricWatchLists            = "reflector_watch_lists_total"
	MetricListPageRetries       = "reflector_list_page_retries_total"
	MetricListPagesUnused       = "reflector_list_pages_unused_total"
	MetricListItems             = "reflector_list_items_total"
	MetricLastListItems         = "reflector_last_list_items"
	MetricLastListDuration      = "reflector_last_list_duration_seconds"
	MetricInitialSyncDuration   = "reflector_initial_sync_duration_seconds"
	MetricWatches               = "reflector_watches_total"
	MetricWatchEnds             = "reflector_watch_ends_total"
	MetricEvents                = "reflector_events_total"
	MetricLastResourceVersion   = "reflector_last_resource_version"
	MetricLastEventTimestamp    = "reflector_last_event_timestamp_seconds"
	MetricLastBookmarkTimestamp = "reflector_last_bookmark_timestamp_seconds"
	MetricShardDropped          = "reflector_shard_dropped_total"
	MetricReshards              = "reflector_reshards_total"
	MetricStoreRefusals         = "reflector_store_refusals_total"
	MetricIndexerFailures       = "reflector_indexer_failures_total"
)

// MetricKind says whether a metric is a counter or a gauge.
type MetricKind int

const (
	Counter MetricKind = iota
	Gauge
)

// MetricDesc describes one metric a Reflector reports.
type MetricDesc struct {
	Name string
	Kind MetricKind
	Help string
	// Label is the name of the metric's one label besides "reflector",
	// or "" if it has none; LabelValues is its fixed set of values.
	Label       string
	LabelValues []string
}

// MetricDescs describes every metric, so that an adapter can declare them
// (with help text and label names) before any Reflector runs.
var MetricDescs = []MetricDesc{
	{Name: MetricLists, Kind: Counter, Help: "LISTs of the whole resource requested (a paginated LIST counts once), by cause.", Label: "cause", LabelValues: causeNames(ListCauses)},
	{Name: MetricWatchLists, Kind: Counter, Help: "WatchList streams requested, by cause.", Label: "cause", LabelValues: causeNames(ListCauses)},
	{Name: MetricListPageRetries, Kind: Counter, Help: "LIST pages retried from their continue token after a transient error."},
	{Name: MetricListPagesUnused, Kind: Counter, Help: "LIST pages requested ahead and never used (the LIST failed or went its own way first)."},
	{Name: MetricListItems, Kind: Counter, Help: "Objects received by LIST and WatchList syncs."},
	{Name: MetricLastListItems, Kind: Gauge, Help: "Objects in the last successful sync."},
	{Name: MetricLastListDuration, Kind: Gauge, Help: "Duration of the last successful sync in seconds."},
	{Name: MetricInitialSyncDuration, Kind: Gauge, Help: "Seconds from the start of the run to the first sync."},
	{Name: MetricWatches, Kind: Counter, Help: "Watches opened, WatchList streams included."},
	{Name: MetricWatchEnds, Kind: Counter, Help: "Watches that ended, and watch requests that failed, by cause.", Label: "cause", LabelValues: causeNames(WatchEndCauses)},
	{Name: MetricEvents, Kind: Counter, Help: "Watch events received, by type (DROPPED: skipped as unstorable).", Label: "type", LabelValues: causeNames(EventTypes)},
	{Name: MetricLastResourceVersion, Kind: Gauge, Help: "Newest resourceVersion the store reached, when numeric."},
	{Name: MetricLastEventTimestamp, Kind: Gauge, Help: "Unix time of the last watch event."},
	{Name: MetricLastBookmarkTimestamp, Kind: Gauge, Help: "Unix time of the last bookmark."},
	{Name: MetricShardDropped, Kind: Counter, Help: "Objects left out of the store as outside the reflector's shard (filtering locally)."},
	{Name: MetricStoreRefusals, Kind: Counter, Help: "Watch events the store refused (each ends its watch and leads to a relist)."},
	{Name: MetricIndexerFailures, Kind: Counter, Help: "Changes an informer's indexer failed to apply after its queue accepted them (each leads to a relist)."},
	{Name: MetricReshards, Kind: Counter, Help: "Shard changes synced, by outcome: merged (only the added ranges listed) or why the whole shard was listed again.", Label: "outcome", LabelValues: reshardOutcomes()},
}

// ReshardMerged is the outcome label of a reshard merged into the store.
const ReshardMerged = "merged"

func reshardOutcomes() []string {
	return append([]string{ReshardMerged}, causeNames(ReshardFallbacks)...)
}

func causeNames[S ~string](causes []S) []string {
	out := make([]string, len(causes))
	for i, c := range causes {
		out[i] = string(c)
	}
	return out
}

// runMetrics holds every series of one run, created up front so that each
// shows from the start (zero) and writing one is a field access. A nil
// *runMetrics is valid and writes nowhere.
type runMetrics struct {
	provided ReflectorMetrics
	counters map[string]map[string]CounterAdder
	gauges   map[string]GaugeMetric
}

func openRunMetrics(p ReflectorMetricsProvider, reflector string) *runMetrics {
	if p == nil {
		return nil
	}
	rm := p.NewReflectorMetrics(reflector)
	m := &runMetrics{provided: rm, counters: map[string]map[string]CounterAdder{}, gauges: map[string]GaugeMetric{}}
	for _, d := range MetricDescs {
		if d.Kind == Gauge {
			m.gauges[d.Name] = orDiscard(rm.Gauge(d.Name))
			continue
		}
		values := d.LabelValues
		if d.Label == "" {
			values = []string{""}
		}
		m.counters[d.Name] = map[string]CounterAdder{}
		for _, v := range values {
			m.counters[d.Name][v] = orDiscard(rm.Counter(d.Name, v))
		}
	}
	return m
}

// discard is a metric that records nothing; it stands in for metrics a
// provider does not want (returned as nil).
type discard struct{}

func orDiscard[M any](m M) M {
	if any(m) == nil {
		return any(discard{}).(M)
	}
	return m
}

func (discard) Add(float64) {}
func (discard) Set(float64) {}

func (m *runMetrics) counter(name, label string) CounterAdder {
	if m == nil {
		return discard{}
	}
	return m.counters[name][label]
}

func (m *runMetrics) gauge(name string) GaugeMetric {
	if m == nil {
		return discard{}
	}
	return m.gauges[name]
}

func (m *runMetrics) listed(cause ListCause, pageRetries, pagesUnused int) {
	m.counter(MetricLists, string(cause)).Add(1)
	if pageRetries > 0 {
		m.counter(MetricListPageRetries, "").Add(float64(pageRetries))
	}
	if pagesUnused > 0 {
		m.counter(MetricListPagesUnused, "").Add(float64(pagesUnused))
	}
}

func (m *runMetrics) synced(items int, d time.Duration) {
	m.counter(MetricListItems, "").Add(float64(items))
	m.gauge(MetricLastListItems).Set(float64(items))
	m.gauge(MetricLastListDuration).Set(d.Seconds())
}

func (m *runMetrics) close() {
	if m != nil {
		m.provided.Delete()
	}
}

// client-go's process-wide Reflector metrics interfaces, unchanged. In
// client-go v0.37 no Reflector reports through the provider that
// SetReflectorMetricsProvider sets, and ours do not either: a Reflector of
// ours reports through ReflectorOptions.Metrics, one provider per
// Reflector, with series deleted when Run returns.
type (
	// CounterMetric is client-go's counter, incremented by one.
	CounterMetric = clientgocache.CounterMetric
	// SummaryMetric is client-go's summary of observations.
	SummaryMetric = clientgocache.SummaryMetric
	// HistogramMetric is client-go's histogram of observations.
	HistogramMetric = clientgocache.HistogramMetric
	// MetricsProvider is client-go's global Reflector metrics provider.
	MetricsProvider = clientgocache.MetricsProvider
)

// SetReflectorMetricsProvider is client-go's SetReflectorMetricsProvider
// (first call wins). See MetricsProvider: no Reflector, client-go's or
// ours, reports through it; set ReflectorOptions.Metrics instead.
func SetReflectorMetricsProvider(metricsProvider MetricsProvider) {
	clientgocache.SetReflectorMetricsProvider(metricsProvider)
}
