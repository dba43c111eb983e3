package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgofeatures "k8s.io/client-go/features"
	clientgocache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// sharedIndexInformer is client-go's SharedIndexInformer over this
// package's Reflector: the Reflector fills client-go's RealFIFO, one loop
// pops it into the indexer and fans the changes out to the handlers, each
// of which has its own goroutine and backlog.
type sharedIndexInformer struct {
	// indexer reports the index functions' failures to the controller
	// (see ErrIndexerFailed).
	indexer *guardedIndexer
	lw      clientgocache.ListerWatcher
	objType runtime.Object
	options SharedIndexInformerOptions

	processor processor
	// sync is the informer's own sync state (never anything pending);
	// its channel closes when the queue has handed out the first list.
	sync syncTracker

	mu                sync.Mutex // guards what follows
	started, stopped  bool
	stoppedAt         time.Time
	resyncCheckPeriod time.Duration
	transform         clientgocache.TransformFunc
	watchErrorHandler clientgocache.WatchErrorHandlerWithContext
	ctrl              *controller
	limits            HandlerLimits
	reflectorOptions  *ReflectorOptions
	// reflectorBuilt is closed once Run has built the Reflector.
	reflectorBuilt chan struct{}
	// halted is closed when stopped is set: the waits for a sync (the
	// informer's and its registrations') return then.
	halted chan struct{}
	// replaced marks the last whole-state replacement of the indexer.
	replaced replaceMark
	// position is where the indexer stands in the stream of changes
	// (guarded by blockDeltas; see QueueSnapshot).
	position storePosition
	// name names the Reflector and labels the handler metrics; it is
	// claimed when Run starts (see claimName).
	name string

	// storeMetrics publishes a compact store's figures (nil: none); set
	// by Run before the goroutine applying changes starts.
	storeMetrics *storeMetrics

	// blockDeltas is held while deltas are applied and while a handler
	// joins or leaves, so that a joining handler sees a consistent store.
	blockDeltas sync.Mutex
}

var _ clientgocache.SharedIndexInformer = &sharedIndexInformer{}

// NewSharedInformer is NewSharedIndexInformer without indexes.
func NewSharedInformer(lw clientgocache.ListerWatcher, exampleObject runtime.Object, defaultEventHandlerResyncPeriod time.Duration) SharedInformer {
	return NewSharedIndexInformer(lw, exampleObject, defaultEventHandlerResyncPeriod, Indexers{})
}

// NewSharedIndexInformer returns a SharedIndexInformer over lw for objects
// like exampleObject, driven by this package's Reflector, whose handlers
// resync every defaultEventHandlerResyncPeriod unless they ask otherwise
// (0: no resyncs). Its parameter and result types are client-go's, so it
// fits controller-runtime's cache.Options.NewInformer and
// SharedInformerFactory.InformerFor. It panics if lw is nil. An index
// function's error does not panic, as client-go's indexer does: the
// informer says so in Health and relists (see ErrIndexerFailed).
func NewSharedIndexInformer(lw clientgocache.ListerWatcher, exampleObject runtime.Object, defaultEventHandlerResyncPeriod time.Duration, indexers Indexers) SharedIndexInformer {
	return newSharedIndexInformer(lw, exampleObject, SharedIndexInformerOptions{ResyncPeriod: defaultEventHandlerResyncPeriod, Indexers: indexers}, "NewSharedIndexInformer")
}

// NewSharedIndexInformerWithOptions is NewSharedIndexInformer with every
// option. The resync check period is the smallest of options.ResyncPeriod
// and the periods of handlers added before Run (at least one second); a
// handler's resync period is rounded up to it. It panics if lw is nil.
func NewSharedIndexInformerWithOptions(lw clientgocache.ListerWatcher, exampleObject runtime.Object, options SharedIndexInformerOptions) SharedIndexInformer {
	return newSharedIndexInformer(lw, exampleObject, options, "NewSharedIndexInformerWithOptions")
}

func newSharedIndexInformer(lw clientgocache.ListerWatcher, obj runtime.Object, options SharedIndexInformerOptions, fn string) *sharedIndexInformer {
	mustBeSetIn(lw, "ListerWatcher", fn)
	s := &sharedIndexInformer{
		indexer:           newGuardedIndexer(options.Indexers, clientgocache.WithStoreMetrics(options.Identifier, options.InformerMetricsProvider)),
		lw:                lw,
		objType:           obj,
		options:           options,
		resyncCheckPeriod: options.ResyncPeriod,
		limits:            HandlerLimits{}.withDefaults(),
		reflectorBuilt:    make(chan struct{}),
		halted:            make(chan struct{}),
	}
	name := fmt.Sprintf("SharedIndexInformer %T", obj)
	s.sync.init(func() string { return name }, s.syncCause, s.halted)
	return s
}

// syncCause is the Reflector's syncCause (see Reflector.WaitForSync), nil
// before Run.
func (s *sharedIndexInformer) syncCause() error {
	if r := s.runningReflector(); r != nil {
		return r.syncCause()
	}
	return nil
}

// runningReflector is the controller's Reflector, nil before Run has
// built it.
func (s *sharedIndexInformer) runningReflector() *Reflector {
	s.mu.Lock()
	c := s.ctrl
	s.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.runningReflector()
}

// lastError is the Reflector's last list/watch error, nil before Run or if
// there was none.
func (s *sharedIndexInformer) lastError() error {
	if r := s.runningReflector(); r != nil {
		return r.Health().LastError
	}
	return nil
}

// Run is RunWithContext with a context that ends when stopCh closes.
func (s *sharedIndexInformer) Run(stopCh <-chan struct{}) {
	s.RunWithContext(wait.ContextForChannel(stopCh))
}

// RunWithContext runs the informer until ctx ends and returns once every
// goroutine it started (Reflector, pop loop, handlers) has stopped; the
// handlers' backlogs are dropped. A panic in the pop loop (an index
// function's, say) leaves at once, as in client-go, after the same stop.
// A second call only logs a warning.
func (s *sharedIndexInformer) RunWithContext(ctx context.Context) {
	defer utilruntime.HandleCrashWithContext(ctx)
	ctrl := s.startOnce(ctx)
	if ctrl == nil {
		klog.FromContext(ctx).Info("Warning: the sharedIndexInformer has started, run more than once is not allowed")
		return
	}
	// Released once everything that writes series under the name has
	// stopped.
	defer releaseName(s.name)
	s.processor.start(s.metricsTarget())
	// Closed last of all (deferred first), once everything is joined.
	s.storeMetrics = openStoreMetrics(s.storeMetricsTarget())
	defer s.storeMetrics.close()
	// Deferred, so that a panic's way out stops and joins everything too:
	// stopped is set, then ctx cancelled, then the goroutines waited for.
	defer s.logUnsynced(klog.FromContext(ctx))
	defer s.processor.stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer s.markStopped()
	wg.Go(func() {
		select {
		case <-ctx.Done():
		case <-ctrl.HasSyncedChecker().Done():
			s.sync.upstreamSynced()
			s.processor.upstreamSynced()
		}
	})
	ctrl.RunWithContext(ctx)
}

// markStopped records that Run is returning: no handler may join now, and
// whatever has not synced yet never will (see syncTracker.wait).
func (s *sharedIndexInformer) markStopped() {
	s.mu.Lock()
	s.stopped, s.stoppedAt = true, time.Now()
	s.mu.Unlock()
	close(s.halted)
}

// logUnsynced logs, when the informer stops before its first sync, the
// last list/watch error: callers whose own wait only says "timed out"
// (controller-runtime's) stop the informer, and this says why.
func (s *sharedIndexInformer) logUnsynced(logger klog.Logger) {
	if s.sync.done() {
		return
	}
	if err := s.lastError(); err != nil {
		logger.Error(err, "Informer stopped before it synced", "informer", s.sync.name())
	}
}

// metricsTarget returns the ReflectorMetricsProvider given through
// SetReflectorOptions (nil if none) and the informer's name for metrics.
func (s *sharedIndexInformer) metricsTarget() (ReflectorMetricsProvider, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o := s.reflectorOptions; o != nil {
		return o.Metrics, s.name
	}
	return nil, s.name
}

// storeMetricsTarget is what openStoreMetrics needs: the metrics
// provider, the informer's name and its compact store (nil if none).
func (s *sharedIndexInformer) storeMetricsTarget() (ReflectorMetricsProvider, string, *compactStore) {
	p, name := s.metricsTarget()
	return p, name, s.indexer.compact
}

// startOnce builds the controller and marks the informer started; nil if
// it had already started.
func (s *sharedIndexInformer) startOnce(ctx context.Context) *controller {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return nil
	}
	logger := klog.FromContext(ctx)
	transform, pack := s.transform, s.indexer.packer(s.transform)
	if pack != nil {
		transform = pack.one
	}
	q := newInformerQueue(logger, s.objType, s.indexer, transform, s.options.Identifier, s.options.InformerMetricsProvider)
	q.packs = pack != nil
	a := deltaApplier{store: s.indexer, handler: fanOut{s}, replaced: &s.replaced, position: &s.position, local: q.local}
	s.ctrl = New(&Config{
		Queue:             q,
		ListerWatcher:     s.lw,
		ObjectType:        s.objType,
		ObjectDescription: s.options.ObjectDescription,
		FullResyncPeriod:  s.resyncCheckPeriod,
		ShouldResync:      func() bool { return s.processor.shouldResync(time.Now()) },
		Process: func(obj interface{}, initial bool) error {
			s.blockDeltas.Lock()
			defer s.blockDeltas.Unlock()
			defer s.storeMetrics.publish()
			return a.process(obj, initial)
		},
		ProcessBatch: func(deltas []Delta, initial bool) error {
			s.blockDeltas.Lock()
			defer s.blockDeltas.Unlock()
			defer s.storeMetrics.publish()
			return a.processBatch(deltas, initial)
		},
		WatchErrorHandlerWithContext: s.watchErrorHandler,
	}).(*controller)
	if o := s.reflectorOptions; o != nil && o.Name != "" {
		s.name = claimName(o.Name, true)
	} else {
		s.name = claimName(informerName(s.objType, s.options.Identifier), false)
	}
	s.ctrl.adjust = s.reflectorOptionsNamed(s.name)
	s.ctrl.built = s.reflectorBuilt
	s.ctrl.held = s.indexer
	s.ctrl.pack = pack
	if pack != nil {
		s.processor.warm = newWarmer(pack.store.cache.handoffs)
	}
	s.ctrl.applies = true
	s.indexer.reportTo(s.ctrl.storeFailed)
	s.started = true
	return s.ctrl
}

// fanOut is the handler the delta applier calls: it queues each change to
// the listeners. An update that keeps the resourceVersion (a resync, or an
// unchanged object in a relist) goes only to listeners whose resync is due.
type fanOut struct{ s *sharedIndexInformer }

func (f fanOut) OnAdd(obj interface{}, isInInitialList bool) {
	f.s.processor.distribute(notification{kind: notifyAdd, obj: obj, initial: isInInitialList}, false)
}

func (f fanOut) OnUpdate(old, obj interface{}) {
	// old and obj may be records (a compact store): compared undecoded.
	f.s.processor.distribute(notification{kind: notifyUpdate, old: old, obj: obj}, sameResourceVersion(old, obj))
}

func (f fanOut) OnDelete(obj interface{}) {
	f.s.processor.distribute(notification{kind: notifyDelete, obj: obj}, false)
}

// queueBatch queues a ReplacedAll's adds and updates to the listeners as
// one batch each (see replaceBatch).
func (f fanOut) queueBatch(b *replaceBatch) { f.s.processor.distributeBatch(b) }

// sameResourceVersion reports whether both objects have metadata and the
// same resourceVersion.
func sameResourceVersion(a, b interface{}) bool {
	if ra, ok := a.(*compactRecord); ok {
		if rb, ok := b.(*compactRecord); ok {
			return sameRecordVersion(ra, rb) && hasVersion(ra) && hasVersion(rb)
		}
	}
	ra, ok := versionOf(a)
	if !ok {
		return false
	}
	rb, ok := versionOf(b)
	return ok && ra == rb
}

// hasVersion says whether r's object has metadata (and so a
// resourceVersion, maybe empty).
func hasVersion(r *compactRecord) bool { return r.pk != nil || hasMeta(r.rawObject()) }

// versionOf is obj's resourceVersion, if it has metadata (a compact
// store's record answers for its object).
func versionOf(obj interface{}) (string, bool) {
	if r, ok := obj.(*compactRecord); ok {
		return r.resourceVersion(), hasVersion(r)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", false
	}
	return m.GetResourceVersion(), true
}

// errStarted is returned by the setters once the informer has started.
var errStarted = errors.New("informer has already started")

// SetWatchErrorHandler sets the handler of list/watch errors; it fails
// once the informer has started. The handler receives a client-go
// Reflector with this informer's Reflector's name and type description.
func (s *sharedIndexInformer) SetWatchErrorHandler(handler clientgocache.WatchErrorHandler) error {
	return s.SetWatchErrorHandlerWithContext(func(_ context.Context, r *clientgocache.Reflector, err error) { handler(r, err) })
}

// SetWatchErrorHandlerWithContext is SetWatchErrorHandler with the context.
func (s *sharedIndexInformer) SetWatchErrorHandlerWithContext(handler clientgocache.WatchErrorHandlerWithContext) error {
	return s.beforeStart(func() { s.watchErrorHandler = handler })
}

// beforeStart runs set under the informer's lock, or returns errStarted
// once the informer has started: the setters' common contract.
func (s *sharedIndexInformer) beforeStart(set func()) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errStarted
	}
	set()
	return nil
}

// SetTransform sets (nil: removes) the function every object passes
// through before it is stored; it fails once the informer has started.
func (s *sharedIndexInformer) SetTransform(handler clientgocache.TransformFunc) error {
	return s.beforeStart(func() { s.transform = handler })
}

// HasSynced reports whether the first list has been applied to the
// indexer (not whether the handlers have seen it: ask the registrations).
func (s *sharedIndexInformer) HasSynced() bool { return s.sync.done() }

// HasSyncedChecker is a DoneChecker for HasSynced; while not synced its
// Name carries the Reflector's last error, which client-go's WaitFor logs.
func (s *sharedIndexInformer) HasSyncedChecker() DoneChecker { return &s.sync }

// WaitForSync blocks until HasSynced (nil), ctx ends, or the informer has
// stopped (Run returned); the error then wraps ErrNotSynced, ctx's error
// (or ErrStopped) and the Reflector's last error, and says when a
// WatchList is streaming (see Reflector.WaitForSync).
func (s *sharedIndexInformer) WaitForSync(ctx context.Context) error { return s.sync.wait(ctx) }

// LastSyncResourceVersion is the Reflector's; "" before Run.
func (s *sharedIndexInformer) LastSyncResourceVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctrl == nil {
		return ""
	}
	return s.ctrl.LastSyncResourceVersion()
}

// GetStore returns the indexer.
func (s *sharedIndexInformer) GetStore() clientgocache.Store { return s.indexer }

// GetIndexer returns the indexer; it exists from construction.
func (s *sharedIndexInformer) GetIndexer() Indexer { return s.indexer }

// AddIndexers adds indexes, before or after Run (existing objects are
// indexed); it fails once the informer has stopped, or if an index name
// is taken.
func (s *sharedIndexInformer) AddIndexers(indexers Indexers) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return errors.New("indexer was not added because it has stopped already")
	}
	return s.indexer.AddIndexers(indexers)
}

// IsStopped reports whether Run has returned (or is returning).
func (s *sharedIndexInformer) IsStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// GetController returns a Controller whose Run does nothing (the informer
// runs itself), as client-go's does.
func (s *sharedIndexInformer) GetController() Controller { return informerController{s} }

// informerController is GetController's result.
type informerController struct{ s *sharedIndexInformer }

func (informerController) Run(<-chan struct{})             { /* the informer runs itself */ }
func (informerController) RunWithContext(context.Context)  { /* the informer runs itself */ }
func (c informerController) HasSynced() bool               { return c.s.HasSynced() }
func (c informerController) HasSyncedChecker() DoneChecker { return c.s.HasSyncedChecker() }
func (c informerController) LastSyncResourceVersion() string {
	if clientgofeatures.FeatureGates().Enabled(clientgofeatures.InformerResourceVersion) {
		return c.s.LastSyncResourceVersion()
	}
	return ""
}
