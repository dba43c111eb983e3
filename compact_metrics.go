package cache

import "sync"

// StoreMetricsProvider is optionally implemented by the
// ReflectorMetricsProvider given to a shared informer (ReflectorOptions.Metrics)
// that also wants the figures of its compact store (ReflectorOptions.Compact).
// Series are labelled with the informer's name only (see
// HandlerMetricsProvider); they are deleted when the informer stops.
type StoreMetricsProvider interface {
	// NewStoreMetrics is called when a compact informer starts.
	NewStoreMetrics(informer string) StoreMetrics
}

// StoreMetrics hands out one compact store's metrics. They are written
// from the informer's goroutine that applies changes to the store, after
// each change (reads made since are added then), and once more when the
// informer stops, before Delete.
type StoreMetrics interface {
	// Counter returns the counter of metric, or nil if not wanted.
	Counter(metric string) CounterAdder
	// Gauge returns the gauge of metric, or nil if not wanted.
	Gauge(metric string) GaugeMetric
	// Delete removes every series of this store; nothing is written after.
	Delete()
}

// Compact store metric names (see CompactStats).
const (
	MetricStoreObjects        = "informer_store_objects"
	MetricStoreBytes          = "informer_store_bytes"
	MetricStoreReadCacheBytes = "informer_store_read_cache_bytes"
	MetricStoreReadHits       = "informer_store_read_hits_total"
	MetricStoreReadMisses     = "informer_store_read_misses_total"
	MetricStoreDecodes        = "informer_store_decodes_total"
)

// StoreMetricDescs describes the compact store metrics (label
// "informer"), for adapters to declare them up front.
var StoreMetricDescs = []MetricDesc{
	{Name: MetricStoreObjects, Kind: Gauge, Help: "Objects the compact store holds."},
	{Name: MetricStoreBytes, Kind: Gauge, Help: "Heap the compact store's records take, about: encodings, keys, index values."},
	{Name: MetricStoreReadCacheBytes, Kind: Gauge, Help: "Estimated heap of the decoded objects the read cache keeps."},
	{Name: MetricStoreReadHits, Kind: Counter, Help: "Reads answered by the read cache."},
	{Name: MetricStoreReadMisses, Kind: Counter, Help: "Reads that decoded an object."},
	{Name: MetricStoreDecodes, Kind: Counter, Help: "Objects decoded from their records."},
}

// storeMetrics publishes a compact store's figures; the zero value (no
// provider) publishes nothing. Its one owner is the informer's goroutine
// applying changes (publish), then Run's end (close).
type storeMetrics struct {
	mu                     sync.Mutex // guards everything: publish and close may race at Run's end
	provided               StoreMetrics
	store                  *compactStore
	objects, bytes, cached GaugeMetric
	hits, misses, decodes  CounterAdder
	// last are the counts published so far: hits, misses, decodes.
	last [3]uint64
}

// openStoreMetrics opens the metrics of store for informer if p wants
// them (nil otherwise).
func openStoreMetrics(p ReflectorMetricsProvider, informer string, store *compactStore) *storeMetrics {
	sp, ok := p.(StoreMetricsProvider)
	if !ok || store == nil {
		return nil
	}
	m := sp.NewStoreMetrics(informer)
	return &storeMetrics{
		provided: m, store: store,
		objects: orDiscard(m.Gauge(MetricStoreObjects)), bytes: orDiscard(m.Gauge(MetricStoreBytes)),
		cached: orDiscard(m.Gauge(MetricStoreReadCacheBytes)),
		hits:   orDiscard(m.Counter(MetricStoreReadHits)), misses: orDiscard(m.Counter(MetricStoreReadMisses)),
		decodes: orDiscard(m.Counter(MetricStoreDecodes)),
	}
}

// publish writes the store's figures now.
func (m *storeMetrics) publish() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.provided == nil {
		return
	}
	st := m.store.stats()
	m.objects.Set(float64(st.Objects))
	m.bytes.Set(float64(st.BytesHeld))
	m.cached.Set(float64(st.ReadCacheBytes))
	now := [3]uint64{st.ReadHits, st.ReadMisses, st.Decodes}
	for i, c := range []CounterAdder{m.hits, m.misses, m.decodes} {
		c.Add(float64(now[i] - m.last[i]))
	}
	m.last = now
}

// close publishes one last time and deletes the series.
func (m *storeMetrics) close() {
	if m == nil {
		return
	}
	m.publish()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.provided.Delete()
	m.provided = nil
}
