package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgofeatures "k8s.io/client-go/features"
	clientgocache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// controller is the Controller New returns: our Reflector fills the
// Config's Queue while one loop pops it into the Config's Process (or
// ProcessBatch) function.
type controller struct {
	config Config
	// name names the Reflector: the file:line that built the controller
	// (see callerName), unless adjust says otherwise.
	name string
	// adjust, if set, edits the Reflector's options before it is built
	// (the shared informer uses it to pass its own settings).
	adjust func(*ReflectorOptions)

	mu        sync.RWMutex
	reflector *Reflector
	// shard, if set, is the shard SetShard gave before the Reflector was
	// built; it is built with it.
	shard *Shard
	// built, if set, is closed once the Reflector is built.
	built chan struct{}
	// held, if set, is the store the Queue feeds (an informer's indexer),
	// where a relist looks for the objects it holds.
	held getter
	// pack, if set, packs objects into the informer's compact store's
	// records: the Reflector runs it on each LIST page (see packWith).
	pack *recordPacker
	// applies: the Config's Process is this package's delta applier (an
	// informer's), so an error it returns is the store's failure to apply
	// a change (see storeFailed); a Process of the user's has its errors
	// dropped, as in client-go.
	applies bool
}

// New returns a Controller for c, driven by this package's Reflector,
// which is named after the caller of New (its file:line), wherever Run is
// called from. c.Queue, c.ListerWatcher and c.Process must be set; New
// panics if the Queue or the ListerWatcher is nil (these are programming
// errors that would otherwise show up only as a hang or a crash inside
// Run).
func New(c *Config) Controller {
	mustBeSetIn(c.Queue, "Queue", "New")
	mustBeSetIn(c.ListerWatcher, "ListerWatcher", "New")
	return &controller{config: *c, name: callerName()}
}

// mustBeSetIn panics, naming fn, if v, a required argument, is nil.
func mustBeSetIn(v any, what, fn string) {
	defer func() {
		if r := recover(); r != nil {
			panic("cache: " + fn + " called with a nil " + what)
		}
	}()
	mustBeSet(v, what)
}

// Run is RunWithContext with a context that ends when stopCh closes.
func (c *controller) Run(stopCh <-chan struct{}) {
	c.RunWithContext(wait.ContextForChannel(stopCh))
}

// RunWithContext builds a Reflector over the Config's ListerWatcher and
// Queue, runs it, and pops the Queue into the Config's process function
// until ctx ends. It closes the Queue when ctx ends and returns once the
// Reflector and the pop loop have both stopped. A panic in the process
// function leaves at once, as in client-go (through
// utilruntime.HandleCrash), after the Reflector has been stopped and
// waited for. Call it once.
func (c *controller) RunWithContext(ctx context.Context) {
	defer utilruntime.HandleCrashWithContext(ctx)
	r := c.buildReflector(ctx)
	if c.built != nil {
		close(c.built)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	// Cancelled on the way out, a panic's way included, before the wait.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wg.Go(func() {
		<-ctx.Done()
		c.config.Queue.Close()
	})
	wg.Go(func() { r.RunWithContext(ctx) })
	c.processLoop(ctx)
}

// buildReflector builds the Reflector RunWithContext runs and publishes
// it (see runningReflector). c.mu is not held while the Reflector is
// built, so a panic there (raised by the options or by the ListerWatcher's
// methods) leaves the controller's readers working: Run's deferred
// functions and the informer's WaitForSync, Health and Stats. A shard that
// SetShard gives meanwhile has the Reflector built again with it.
func (c *controller) buildReflector(ctx context.Context) *Reflector {
	for {
		c.mu.RLock()
		shard := c.shard
		c.mu.RUnlock()
		r := c.newReflector(ctx, shard)
		c.mu.Lock()
		if c.shard == shard {
			c.reflector = r
			c.mu.Unlock()
			return r
		}
		c.mu.Unlock()
	}
}

// newReflector builds a Reflector for RunWithContext, with shard (if not
// nil) as the shard SetShard gave before Run. c.mu is not held.
func (c *controller) newReflector(ctx context.Context, shard *Shard) *Reflector {
	cfg := &c.config
	logger := klog.FromContext(ctx)
	opts := ReflectorOptions{
		Name:            c.name,
		Logger:          &logger,
		ResyncPeriod:    cfg.FullResyncPeriod,
		MinWatchTimeout: cfg.MinWatchTimeout,
		TypeDescription: cfg.ObjectDescription,
	}
	// shadow is handed to client-go's error handlers, which take client-go's
	// Reflector; it is built below, before the Reflector runs.
	var shadow *clientgocache.Reflector
	if h := clientGoWatchErrorHandler(cfg); h != nil {
		opts.WatchErrorHandler = func(ctx context.Context, _ *Reflector, err error) { h(ctx, shadow, err) }
	}
	if c.adjust != nil {
		c.adjust(&opts)
	}
	if shard != nil {
		opts.Shard = shard
	}
	r := NewReflectorWithOptions(cfg.ListerWatcher, cfg.ObjectType, cfg.Queue, opts)
	if c.held != nil {
		r.reuseFrom(c.held, opts)
		r.packWith(c.pack)
		if v, ok := c.held.(handlerView); ok {
			// A compact store's records, undecoded (see keptObjects).
			r.heldList = v.allForHandlers
		} else if l, ok := c.held.(interface{ List() []interface{} }); ok {
			r.heldList = l.List
		}
	}
	r.ShouldResync = cfg.ShouldResync
	r.WatchListPageSize = cfg.WatchListPageSize
	if opts.WatchErrorHandler != nil {
		shadow = shadowReflector(r, cfg)
	}
	return r
}

// clientGoWatchErrorHandler returns the Config's error handler, if any, in
// its context form (WatchErrorHandler wins, as in client-go).
func clientGoWatchErrorHandler(cfg *Config) clientgocache.WatchErrorHandlerWithContext {
	if h := cfg.WatchErrorHandler; h != nil {
		return func(_ context.Context, r *clientgocache.Reflector, err error) { h(r, err) }
	}
	return cfg.WatchErrorHandlerWithContext
}

// shadowReflector builds a client-go Reflector that is never run, with r's
// name and type description, to be handed to client-go's watch error
// handlers (client-go's DefaultWatchErrorHandler reads it, so it must not be
// nil). It shares nothing with r that it could change.
func shadowReflector(r *Reflector, cfg *Config) *clientgocache.Reflector {
	return clientgocache.NewReflectorWithOptions(cfg.ListerWatcher, cfg.ObjectType, discardStore{},
		clientgocache.ReflectorOptions{Name: r.Name(), TypeDescription: r.TypeDescription()})
}

// discardStore is the never-written store of a shadow Reflector.
type discardStore struct{}

func (discardStore) Add(interface{}) error               { return nil }
func (discardStore) Update(interface{}) error            { return nil }
func (discardStore) Delete(interface{}) error            { return nil }
func (discardStore) Replace([]interface{}, string) error { return nil }
func (discardStore) Resync() error                       { return nil }

// processLoop pops the Queue until it is closed or ctx ends. Errors from
// the process function are dropped after the Queue has dealt with them,
// as in client-go, unless it is an informer's, whose errors are the
// store's failures (see storeFailed).
func (c *controller) processLoop(ctx context.Context) {
	pop := c.popper()
	for ctx.Err() == nil {
		err := pop()
		switch {
		case errors.Is(err, ErrFIFOClosed):
			return
		case err != nil && c.applies:
			c.storeFailed(fmt.Errorf("%w: %w", ErrIndexerFailed, err))
		}
	}
}

// storeFailed is told, from the goroutine that processes the Queue, that
// the store the Queue is applied to failed to apply a change (err, which
// wraps ErrIndexerFailed): the Reflector counts it and relists (see
// Reflector.relistFor). Before Run has built the Reflector nothing is
// applied, so nothing fails.
func (c *controller) storeFailed(err error) {
	if r := c.runningReflector(); r != nil {
		r.relistFor(err)
	}
}

// popper returns a function that pops once: in batches when the Queue can,
// the Config has a ProcessBatch and client-go's InOrderInformersBatchProcess
// gate is on (as client-go decides), one item at a time otherwise.
func (c *controller) popper() func() error {
	process := PopProcessFunc(c.config.Process)
	bq, ok := c.config.Queue.(QueueWithBatch)
	if ok && c.config.ProcessBatch != nil && clientgofeatures.FeatureGates().Enabled(clientgofeatures.InOrderInformersBatchProcess) {
		return func() error { return bq.PopBatch(c.config.ProcessBatch, process) }
	}
	return func() error {
		_, err := c.config.Queue.Pop(process)
		return err
	}
}

// HasSynced reports whether the Queue has handed out its first list.
func (c *controller) HasSynced() bool { return c.config.Queue.HasSynced() }

// HasSyncedChecker is the Queue's DoneChecker for the same.
func (c *controller) HasSyncedChecker() DoneChecker { return c.config.Queue.HasSyncedChecker() }

// LastSyncResourceVersion is the Reflector's, or "" before Run.
func (c *controller) LastSyncResourceVersion() string {
	if r := c.runningReflector(); r != nil {
		return r.LastSyncResourceVersion()
	}
	return ""
}

// runningReflector returns the Reflector of the run, nil before Run.
func (c *controller) runningReflector() *Reflector {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.reflector
}
