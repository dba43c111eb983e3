package cache

import (
	"slices"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
)

// Stats is a snapshot of what a Reflector has done since it was created.
// Maps are fresh copies that hold every key of their fixed set.
type Stats struct {
	// Lists counts LISTs (a paginated LIST counts once) by cause.
	Lists map[ListCause]uint64
	// WatchLists counts WatchList streams requested, by cause.
	WatchLists map[ListCause]uint64
	// ListPageRetries counts LIST pages retried after a transient error.
	ListPageRetries uint64
	// ListPagesUnused counts LIST pages our ListWatches requested ahead
	// (see docs/features.md, pages pipelined) that the LIST never used:
	// it failed, or went its own way (a page retried, a fallback), first:
	// two at most each time. What pipelining cost the server beyond
	// client-go's requests. (A LIST abandoned because the Reflector
	// stopped is counted neither here nor in Lists.)
	ListPagesUnused uint64
	// WatchesOpened counts watches opened, WatchList streams included.
	WatchesOpened uint64
	// WatchEnds counts, by cause, watches (and WatchLists) that ended and
	// requests to open one that failed.
	WatchEnds map[WatchEndCause]uint64
	// Events counts watch events by type (EventDropped for skipped ones).
	Events map[watch.EventType]uint64
	// ItemsListed counts objects received by every LIST and WatchList sync.
	ItemsListed uint64
	// ShardDropped counts objects a sharded Reflector filtering locally
	// (ReflectorOptions.ShardFilterLocally) left out of its store because
	// they hash outside its shard: LIST items and watch events.
	ShardDropped uint64
	// ShardIgnored is set once a LIST of a sharded Reflector filtering
	// locally came back without the echo of its selector: the server
	// ignores shard selectors, and every object is received and decoded
	// to keep those of the shard.
	ShardIgnored bool
	// ItemsReused counts objects of LIST and WatchList syncs for which the
	// store was given the object it already held, at the same key and
	// resourceVersion, instead of the new copy (see
	// ReflectorOptions.ReuseHeldObjects).
	ItemsReused uint64
	// ItemsNotDecoded counts those of ItemsReused that were not even
	// decoded: items of a relist's LIST pages (protobuf or JSON, typed or
	// unstructured) and objects of a relisting WatchList's initial events
	// (protobuf), read through this
	// module's own ListWatch (the informer factories'), whose namespace,
	// name and resourceVersion, read from their bytes, matched what an
	// informer's store held. Like ItemsReused, it counts the pages of a
	// LIST that failed later too.
	ItemsNotDecoded uint64
	// ReshardsMerged counts shard changes synced by merging: objects
	// outside the new shard dropped from the store, only the added ranges
	// listed (see Reflector.SetShard). ReshardFallbacks counts, by
	// reason, those synced by listing the whole shard again.
	ReshardsMerged   uint64
	ReshardFallbacks map[ReshardFallback]uint64
	// StoreRefusals counts watch events the store refused (see
	// ErrStoreRefused); each ended its watch and led to a relist.
	StoreRefusals uint64
	// IndexerFailures counts the changes an informer's indexer failed to
	// apply after its queue had accepted them (see ErrIndexerFailed); each
	// ended the cycle in progress (or the next) and led to a relist.
	IndexerFailures uint64
	// LastListItems and LastListDuration describe the last successful sync.
	LastListItems    int
	LastListDuration time.Duration
	// InitialSyncDuration is the time from the first ListAndWatch to the
	// first sync; zero until then.
	InitialSyncDuration time.Duration
	// LastResourceVersion is the newest resourceVersion the store reached.
	LastResourceVersion string
	// LastEvent and LastBookmark are when the last watch event and the last
	// bookmark arrived (zero: never); SinceLastEvent and SinceLastBookmark
	// are the time from then to the snapshot (zero when never).
	LastEvent, LastBookmark           time.Time
	SinceLastEvent, SinceLastBookmark time.Duration
}

// statsRecorder keeps a Reflector's Stats and mirrors each change into the
// metrics of the run in progress. The loop goroutine writes; any goroutine
// may take a snapshot. Counts by cause live in fixed arrays, so creating a
// recorder and counting allocate nothing; maps are built for snapshots.
type statsRecorder struct {
	clock clock.PassiveClock

	mu sync.Mutex
	// s holds everything but the counts by cause and type, which are
	// indexed like ListCauses, WatchEndCauses and EventTypes. Lists and
	// watch ends happen a few times a second at most, even in a failure
	// loop held back by backoff, so 32 bits count them for over a century;
	// events get 64.
	s                 Stats
	lists, watchLists [numListCauses]uint32
	fallbacks         [numReshardFallbacks]uint32
	watchEnds         [numWatchEndCauses]uint32
	events            [numEventTypes]uint64
	// started is when the first ListAndWatch began; zero before.
	started time.Time
	// m holds the open metrics; nil when none are open.
	m *runMetrics
}

// The sizes of the fixed sets (a test checks them against the sets).
const (
	numListCauses       = 12
	numWatchEndCauses   = 10
	numEventTypes       = 6
	numReshardFallbacks = 8
)

// count adds one to the count of k, a value of set, in counts.
func count[K comparable](counts []uint32, set []K, k K) { counts[slices.Index(set, k)]++ }

// countsByValue returns counts as a map from every value of set.
func countsByValue[K comparable, N uint32 | uint64](counts []N, set []K) map[K]uint64 {
	m := make(map[K]uint64, len(set))
	for i, k := range set {
		m[k] = uint64(counts[i])
	}
	return m
}

// snapshot copies the stats, computing the "since" durations at now.
func (r *statsRecorder) snapshot() Stats {
	now := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.s
	out.Lists = countsByValue(r.lists[:], ListCauses)
	out.WatchLists = countsByValue(r.watchLists[:], ListCauses)
	out.WatchEnds = countsByValue(r.watchEnds[:], WatchEndCauses)
	out.Events = countsByValue(r.events[:], EventTypes)
	out.ReshardFallbacks = countsByValue(r.fallbacks[:], ReshardFallbacks)
	if !out.LastEvent.IsZero() {
		out.SinceLastEvent = now.Sub(out.LastEvent)
	}
	if !out.LastBookmark.IsZero() {
		out.SinceLastBookmark = now.Sub(out.LastBookmark)
	}
	return out
}

// begin marks the start of a ListAndWatch; the first one starts the clock
// of InitialSyncDuration.
func (r *statsRecorder) begin(now time.Time) {
	r.mu.Lock()
	if r.started.IsZero() {
		r.started = now
	}
	r.mu.Unlock()
}

// storeRefused counts a watch event the store refused.
func (r *statsRecorder) storeRefused() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.s.StoreRefusals++
	r.m.counter(MetricStoreRefusals, "").Add(1)
}

// indexerFailed counts a change an informer's indexer failed to apply.
// Unlike the other counts, it comes from the goroutine that applies the
// informer's queue (the mutex orders it with the loop's writes).
func (r *statsRecorder) indexerFailed() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.s.IndexerFailures++
	r.m.counter(MetricIndexerFailures, "").Add(1)
}

// resharded counts a shard change merged into the store.
func (r *statsRecorder) resharded() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.s.ReshardsMerged++
	r.m.counter(MetricReshards, ReshardMerged).Add(1)
}

// reshardFellBack counts a shard change synced by a whole LIST, and why.
func (r *statsRecorder) reshardFellBack(why ReshardFallback) {
	r.mu.Lock()
	defer r.mu.Unlock()
	count(r.fallbacks[:], ReshardFallbacks, why)
	r.m.counter(MetricReshards, string(why)).Add(1)
}

// watchListed counts a WatchList attempt made for cause.
func (r *statsRecorder) watchListed(cause ListCause) {
	r.mu.Lock()
	defer r.mu.Unlock()
	count(r.watchLists[:], ListCauses, cause)
	r.m.counter(MetricWatchLists, string(cause)).Add(1)
}

// synced records a successful sync of items objects that took d.
func (r *statsRecorder) synced(items int, d time.Duration, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.s.ItemsListed += uint64(items)
	r.s.LastListItems, r.s.LastListDuration = items, d
	first := r.s.InitialSyncDuration == 0 && !r.started.IsZero()
	if first {
		r.s.InitialSyncDuration = max(now.Sub(r.started), time.Nanosecond)
	}
	r.m.synced(items, d)
	if first {
		r.m.gauge(MetricInitialSyncDuration).Set(r.s.InitialSyncDuration.Seconds())
	}
}

// listed records a LIST request sequence of the given cause, successful
// or not, how many of its pages were retried, and how many pages
// requested ahead it left unused.
func (r *statsRecorder) listed(cause ListCause, pageRetries, pagesUnused int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	count(r.lists[:], ListCauses, cause)
	r.s.ListPageRetries += uint64(pageRetries)
	r.s.ListPagesUnused += uint64(pagesUnused)
	r.m.listed(cause, pageRetries, pagesUnused)
}

// shardIgnoredBy notes a LIST the server did not shard.
func (r *statsRecorder) shardIgnoredBy(res listed) {
	if !res.shardIgnored {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.s.ShardIgnored = true
}

// shardDropped counts n objects left out as outside the shard.
func (r *statsRecorder) shardDropped(n int) {
	if n == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.s.ShardDropped += uint64(n)
	r.m.counter(MetricShardDropped, "").Add(float64(n))
}

// reused counts n objects of a sync for which the held object was kept,
// notDecoded of them found before they were decoded.
func (r *statsRecorder) reused(n, notDecoded int) {
	if n == 0 {
		return
	}
	r.mu.Lock()
	r.s.ItemsReused += uint64(n)
	r.s.ItemsNotDecoded += uint64(notDecoded)
	r.mu.Unlock()
}

// watchOpened counts an opened watch.
func (r *statsRecorder) watchOpened() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.s.WatchesOpened++
	r.m.counter(MetricWatches, "").Add(1)
}

// watchEnded counts a watch that ended for cause.
func (r *statsRecorder) watchEnded(cause WatchEndCause) {
	r.mu.Lock()
	defer r.mu.Unlock()
	count(r.watchEnds[:], WatchEndCauses, cause)
	r.m.counter(MetricWatchEnds, string(cause)).Add(1)
}

// Indexes of the event types in EventTypes, for counting without a lookup.
const (
	idxAdded = iota
	idxModified
	idxDeleted
	idxBookmark
	idxError
	idxDropped
)

// eventBatch counts the events of one burst without locking; flush hands
// the counts to the recorder at once.
type eventBatch struct {
	// counts are indexed like EventTypes. A burst holds at most burst+1
	// events, so 16 bits are plenty (the constant below fails to compile
	// if burst ever outgrows them).
	counts [numEventTypes]uint16
	// shardDropped counts events left out as outside the shard.
	shardDropped uint16
}

const _ = uint16(burst + 1)

// count adds an event whose type has index i in EventTypes.
func (b *eventBatch) count(i int) { b.counts[i]++ }

// hasBookmark reports whether the batch holds a bookmark.
func (b *eventBatch) hasBookmark() bool { return b.counts[idxBookmark] != 0 }

// flush records the batch as having arrived at now, with rv the newest
// resourceVersion the store reached, and empties the batch. It runs once
// per burst of events, so it does only what the snapshot needs unless
// metrics are open.
func (r *statsRecorder) flush(b *eventBatch, rv string, now time.Time) {
	r.mu.Lock()
	for i, n := range b.counts {
		r.events[i] += uint64(n)
	}
	r.s.LastEvent = now
	r.s.ShardDropped += uint64(b.shardDropped)
	if b.hasBookmark() {
		r.s.LastBookmark = now
	}
	if r.m != nil {
		r.flushMetricsLocked(b, now)
	}
	r.resourceVersionLocked(rv)
	r.mu.Unlock()
	*b = eventBatch{}
}

func (r *statsRecorder) flushMetricsLocked(b *eventBatch, now time.Time) {
	for i, n := range b.counts {
		if n > 0 {
			r.m.counter(MetricEvents, string(EventTypes[i])).Add(float64(n))
		}
	}
	r.m.gauge(MetricLastEventTimestamp).Set(unixSeconds(now))
	if b.shardDropped > 0 {
		r.m.counter(MetricShardDropped, "").Add(float64(b.shardDropped))
	}
	if b.hasBookmark() {
		r.m.gauge(MetricLastBookmarkTimestamp).Set(unixSeconds(now))
	}
}

// resourceVersion records the newest resourceVersion the store reached.
func (r *statsRecorder) resourceVersion(rv string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resourceVersionLocked(rv)
}

func (r *statsRecorder) resourceVersionLocked(rv string) {
	r.s.LastResourceVersion = rv
	if r.m == nil {
		return
	}
	// resourceVersions are opaque; the gauge is only set for numeric ones.
	if n, err := strconv.ParseUint(rv, 10, 64); err == nil {
		r.m.gauge(MetricLastResourceVersion).Set(float64(n))
	}
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// openMetrics starts writing to the metrics of a new run; it returns
// false if a run's metrics are already open.
func (r *statsRecorder) openMetrics(p ReflectorMetricsProvider, reflector string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m != nil || p == nil {
		return false
	}
	r.m = openRunMetrics(p, reflector)
	return true
}

// closeMetrics deletes the run's metrics; nothing is written to them after.
func (r *statsRecorder) closeMetrics() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m.close()
	r.m = nil
}
