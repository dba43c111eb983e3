package cache

import (
	"context"
	"math/rand/v2"
	"reflect"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

const defaultExpectedTypeName = "<unspecified>"

// realClock times what client-go's Reflector does not put on its clock:
// the wait between cycles in Run (client-go's waits on the real clock
// too), health and its grace periods, stall detection, and LIST page
// retries. The injected clock (ReflectorOptions.Clock) keeps only the
// timers client-go's keeps there (the backoff between attempts within a
// cycle, and the resync period), so that a test stepping a fake clock
// whenever it has a timer pending drives ours as it drives client-go's.
var realClock clock.RealClock

// Watch timeouts are drawn from [min, 2*min) to spread reconnects; the
// minimum is never below five minutes.
const defaultMinWatchTimeout = 5 * time.Minute

// subject is what a Reflector reflects: its name and type description (for
// logs), the Go type and GVK events must have to reach the store, and how
// objects are prepared before they reach it.
type subject struct {
	name            string
	typeDescription string
	expectedType    reflect.Type
	expectedGVK     *schema.GroupVersionKind
	// in prepares the objects of syncs and watch events; nil when there
	// is nothing to do.
	in *intake
}

// Reflector watches a resource and reflects every change into a store.
// Create it with NewReflector, NewNamedReflector or NewReflectorWithOptions
// and start it with Run or RunWithContext. Exported fields must be set before
// Run and not changed afterwards.
type Reflector struct {
	// WatchListPageSize is the page size of LIST requests. When zero, the
	// first LIST at RV "0" uses 500 and keeps paging if the server paged it;
	// later relists at a specific resourceVersion ask for everything at once
	// so that the server can answer from its watch cache.
	WatchListPageSize int64
	// ShouldResync, if set, is asked at each resync period whether to call
	// the store's Resync; nil means always.
	ShouldResync func() bool
	// MaxInternalErrorRetryDuration is how long a watch failing with internal
	// (500) errors is re-opened from the same resourceVersion before the
	// Reflector relists instead. Zero never retries. A watch is re-opened
	// at once, as in client-go, except that a Reflector with the default
	// backoff and clock (ReflectorOptions.Backoff and Clock unset) waits a
	// backoff delay before re-opening a watch that had delivered nothing,
	// so that a server failing every watch is not asked again in a tight
	// loop.
	MaxInternalErrorRetryDuration time.Duration

	subject

	store  ReflectorStore
	lw     ListerWatcherWithContext
	logger klog.Logger
	clock  clock.Clock
	rand   *rand.Rand

	resyncPeriod    time.Duration
	minWatchTimeout time.Duration
	backoff         *backoff
	// pageRetries is the page retry limit of LISTs; negative for none.
	pageRetries       int
	watchErrorHandler WatchErrorHandlerWithContext

	health *health
	// live tracks a loss of touch with the server (see liveness.go).
	live  liveness
	stats statsRecorder
	// metrics receives a run's metrics; nil for none.
	metrics ReflectorMetricsProvider
	// listCause is why the next sync happens: set by cycle.apply on a
	// failure and by cycle.synced (see causes.go).
	listCause ListCause
	// pos is the resume position; the loop goroutine owns it (see rv.go).
	pos resumePosition
	// stale counts watches failing at one RV (see rv.go).
	stale          staleStreak
	staleThreshold int
	stallWindow    time.Duration
	// quietAfter and quietTimeout configure quiet checks (see quietCheck).
	quietAfter, quietTimeout time.Duration
	// server is what the Reflector has learned about the server.
	server serverFacts
	// watchListing is the progress of a WatchList streaming the initial
	// state, for WaitForSync.
	watchListing watchListProgress
	// shards holds the shard of a sharded Reflector; nil when unsharded.
	shards *shardControl
	// relists holds requests to relist made from other goroutines (an
	// informer's failing indexer; see relistFor).
	relists relistRequests
	// storeShard is the shard whose objects the store holds (the zero
	// Shard before the first sync); pendingReshard says the shard changed
	// since, so the next cycle tries to merge (see reshard_merge.go);
	// heldList lists what the store holds (nil: it cannot say).
	storeShard     Shard
	pendingReshard bool
	heldList       func() []interface{}
	// reshardByRelist is ReflectorOptions.ReshardByRelist.
	reshardByRelist bool
	// paceInternalErrors: the Reflector runs with its default backoff and
	// clock, so a watch that ends with an internal error before it
	// delivered anything is re-opened after a backoff delay. With a backoff
	// or clock of the user's, it is re-opened at once, as in client-go (a
	// test written for client-go with a fake clock it does not advance, or
	// a zero backoff, would otherwise stall or change).
	paceInternalErrors bool
}

// NewNamespaceKeyedIndexerAndReflector returns an Indexer keyed by
// MetaNamespaceKeyFunc with the NamespaceIndex, and a Reflector filling it,
// as client-go's function of that name does.
func NewNamespaceKeyedIndexerAndReflector(lw ListerWatcher, expectedType interface{}, resyncPeriod time.Duration) (indexer Indexer, reflector *Reflector) {
	indexer = NewIndexer(MetaNamespaceKeyFunc, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
	return indexer, NewReflectorWithOptions(lw, expectedType, indexer, ReflectorOptions{ResyncPeriod: resyncPeriod})
}

// NewReflector creates a Reflector named after the caller's file:line.
// It panics if lw or store is nil.
func NewReflector(lw ListerWatcher, expectedType interface{}, store ReflectorStore, resyncPeriod time.Duration) *Reflector {
	return NewReflectorWithOptions(lw, expectedType, store, ReflectorOptions{ResyncPeriod: resyncPeriod})
}

// NewNamedReflector creates a Reflector with the given name.
// It panics if lw or store is nil.
func NewNamedReflector(name string, lw ListerWatcher, expectedType interface{}, store ReflectorStore, resyncPeriod time.Duration) *Reflector {
	return NewReflectorWithOptions(lw, expectedType, store, ReflectorOptions{Name: name, ResyncPeriod: resyncPeriod})
}

// NewReflectorWithOptions creates a Reflector that keeps store in step with
// the resource lw serves. expectedType (nil: anything) is checked where
// client-go checks it, on events: a watch event, or a WatchList's initial
// event, whose object is not of expectedType's Go type (or, for an
// Unstructured with apiVersion and kind set, that GVK) does not reach the
// store (nor the WatchList's Replace): it is logged at error level
// ("Skipping watch event", an error wrapping ErrUnexpectedObject), counted
// in Stats.Events[EventDropped], and the stream goes on. LIST items are not
// checked, as in client-go: every item of a LIST reaches the store's
// Replace as the ListerWatcher decoded it, whatever its type (a LIST
// answered in Table form fails). It panics if lw or store is nil, or options.Shard
// points at the zero Shard: those are programming errors that would
// otherwise only show up as a hang, or an unsharded cache, later.
func NewReflectorWithOptions(lw ListerWatcher, expectedType interface{}, store ReflectorStore, options ReflectorOptions) *Reflector {
	mustBeSet(lw, "ListerWatcher")
	mustBeSet(store, "store")
	o := options.withDefaults(expectedType)
	r := &Reflector{
		subject: subject{
			name:            o.Name,
			typeDescription: o.TypeDescription,
			expectedType:    reflect.TypeOf(expectedType),
			expectedGVK:     expectedGVKOf(expectedType),
			in:              newIntake(o, store),
		},
		store:           store,
		lw:              ToListerWatcherWithContext(lw),
		logger:          klog.LoggerWithName(o.logger(), o.Name),
		clock:           o.Clock,
		rand:            o.Rand,
		resyncPeriod:    o.ResyncPeriod,
		minWatchTimeout: max(o.MinWatchTimeout, defaultMinWatchTimeout),
		backoff:         newBackoff(o.backoff(), defaultBackoffReset),
		quietAfter:      o.QuietCheckAfter,
		quietTimeout:    o.QuietCheckTimeout,
		server: serverFacts{
			watchList:       o.watchList() && !watchListUnsupported(lw),
			watchListMemory: o.WatchListRefusalMemory,
		},
		watchErrorHandler: o.WatchErrorHandler,
		health:            newHealth(realClock.Now(), o.OnHealthChange),
		stats:             statsRecorder{clock: o.Clock},
		metrics:           o.Metrics,
		listCause:         ListInitial,
		staleThreshold:    o.StaleRVThreshold,
		stallWindow:       o.StallWindow,
		pageRetries:       o.ListPageRetries,
		shards:            newShardControl(o.Shard, o.ShardFilterLocally),
		heldList:          listerOf(store),
		reshardByRelist:   o.ReshardByRelist,
		// Decided on the options as given, before defaults fill them in.
		paceInternalErrors: options.Backoff == nil && options.Clock == nil,
	}
	r.live = liveness{grace: o.HealthGrace, health: r.health, backoff: r.backoff}
	return r
}

// mustBeSet panics if v, a required argument, is nil or a nil pointer.
func mustBeSet(v any, what string) {
	if isNil(v) {
		panic("cache: NewReflector called with a nil " + what)
	}
}

// isNil reports whether v is nil or holds a nil pointer.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// Name returns the reflector's name.
func (r *Reflector) Name() string { return r.name }

// TypeDescription returns the description of the stored type.
func (r *Reflector) TypeDescription() string { return r.typeDescription }

// LastSyncResourceVersion returns the newest resourceVersion the store has
// been brought to. Safe from any goroutine; it is published once per burst
// of already-queued events (at most 257), so it may trail the store by
// the events of the burst being applied.
func (r *Reflector) LastSyncResourceVersion() string { return r.pos.snapshot() }

// Stats returns a snapshot of what the Reflector has done since it was
// created. Safe from any goroutine.
func (r *Reflector) Stats() Stats { return r.stats.snapshot() }

// Run is RunWithContext with a context that ends when stopCh closes.
func (r *Reflector) Run(stopCh <-chan struct{}) {
	r.RunWithContext(wait.ContextForChannel(stopCh))
}

// RunWithContext lists and watches until ctx ends, backing off between
// cycles (on the real clock, as client-go's Run does, whatever
// ReflectorOptions.Clock is), and returns once ctx has ended. Errors that end a cycle go to the
// WatchErrorHandler. The run's metrics (ReflectorOptions.Metrics) are
// deleted before it returns, and Health says Stopped from then on (until
// it is run again). A ListerWatcher call that ignores ctx may
// still be running when RunWithContext returns; the goroutine waiting for
// it exits (stopping any watch it returns) as soon as the call does. A
// ListerWatcher call that panics makes RunWithContext (and ListAndWatch)
// panic with a *ListerWatcherPanic holding the value and the stack of
// the call, which shows the frame that panicked; one that returns nil and
// no error has failed, with an error wrapping ErrNilResult.
func (r *Reflector) RunWithContext(ctx context.Context) {
	logger := r.loggerFor(ctx)
	logger.V(3).Info("Starting reflector", "type", r.typeDescription, "resyncPeriod", r.resyncPeriod, "reflector", r.name)
	defer logger.V(3).Info("Stopping reflector", "type", r.typeDescription, "resyncPeriod", r.resyncPeriod, "reflector", r.name)
	if r.stats.openMetrics(r.metrics, r.name) {
		defer r.stats.closeMetrics()
	}
	r.health.resume(realClock.Now())
	defer r.stopped()
	for ctx.Err() == nil {
		if !r.runOnce(ctx) {
			return
		}
	}
}

// stopped is the last thing Run does, on every way out (a panic's too):
// touch with the server is forgotten (a later Run starts afresh) and
// Health says Stopped.
func (r *Reflector) stopped() {
	r.live.stop()
	r.health.stop(realClock.Now())
}

// runOnce runs one cycle and the backoff wait after it; false if ctx ended
// first. A sharded Reflector whose shard changes ends both at once and
// syncs again without waiting (see SetShard).
func (r *Reflector) runOnce(ctx context.Context) bool {
	ictx := r.shards.begin(ctx)
	retryAfter, err := r.listAndWatch(ictx)
	if err != nil && ictx.Err() == nil {
		r.watchErrorHandler(ctx, r, err)
	}
	slept := r.sleep(ictx, r.delayFor(retryAfter))
	if r.shards.end() && ctx.Err() == nil {
		r.listCause, r.pendingReshard = ListReshard, true
		return true
	}
	return slept
}

// ListAndWatch is ListAndWatchWithContext with a context that ends when
// stopCh closes.
func (r *Reflector) ListAndWatch(stopCh <-chan struct{}) error {
	return r.ListAndWatchWithContext(wait.ContextForChannel(stopCh))
}

// ListAndWatchWithContext runs one cycle: it brings the store to the
// server's current state (WatchList or LIST), then watches until the watch
// can no longer be resumed or ctx ends. It returns an error when the cycle
// could not get as far as watching (or the watch could not be opened), and
// nil otherwise, including when ctx ends. The error is the one client-go's
// Reflector returns in the same case: a failed LIST wrapped as "failed to
// list <type>: %w" and a failed Replace as "unable to sync list result:
// %w" (client-go formats that cause with %v; ours also unwraps to it), and
// a watch that could not be opened as the ListerWatcher returned it,
// unwrapped, so a WatchErrorHandler written for client-go may compare it
// (err == io.EOF) or type-assert it. Called on its own (not from Run), it
// opens and deletes its own metrics.
func (r *Reflector) ListAndWatchWithContext(ctx context.Context) error {
	_, err := r.listAndWatch(ctx)
	return err
}

// listAndWatch runs one cycle and returns the delay the server asked for
// with the failure that ended it (if any) and its error.
func (r *Reflector) listAndWatch(ctx context.Context) (time.Duration, error) {
	r.loggerFor(ctx).V(3).Info("Listing and watching", "type", r.typeDescription, "reflector", r.name)
	r.stats.begin(r.clock.Now())
	if r.stats.openMetrics(r.metrics, r.name) {
		defer r.stats.closeMetrics()
	}
	c := newCycle(ctx, r)
	err := c.run(ctx)
	return c.retryAfter, err
}

// loggerFor is the logger of a run with ctx: the context's own, else the
// Logger option's (klog.Background() by default).
func (r *Reflector) loggerFor(ctx context.Context) klog.Logger {
	if l, err := logr.FromContext(ctx); err == nil {
		return l
	}
	return r.logger
}

// sleep waits d, the delay between cycles, on the real clock (as
// client-go's Run does, whatever clock the Reflector was given),
// reporting a loss of touch whose grace period ends meanwhile; false if
// ctx ended first. A d that is not positive arms no timer.
func (r *Reflector) sleep(ctx context.Context, d time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	if d <= 0 {
		return true
	}
	t := realClock.NewTimer(d)
	defer t.Stop()
	_, _, why := await(ctx, &r.live, nil, never, t.C())
	return why == 0
}

// sleepOn waits d on c; false if ctx ended first. An ended ctx, or a d
// that is not positive, returns at once, without a timer.
func sleepOn(ctx context.Context, c clock.Clock, d time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	if d <= 0 {
		return true
	}
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}
