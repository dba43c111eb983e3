package cache

import (
	"errors"
	"fmt"
	"maps"
	"sync"

	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache/internal/repr"
)

// ErrIndexerFailed is wrapped by the error of a change an informer's
// indexer could not apply as its queue was processed: an index function
// returned an error on the object (client-go's indexer panics, which
// crashes the process), or the indexer refused the change (a key it
// cannot make). client-go's informers drop such an error. Ours log it at
// error level, count it (Stats.IndexerFailures, the
// reflector_indexer_failures_total metric) and have the Reflector end
// its cycle: Health turns Degraded (ReasonStoreFailing, the error as
// LastError) at once, and after a backoff delay the Reflector relists
// (Lists[store_refused]), whose Replace rebuilds the indexes, so that once
// the index function accepts the object again the indexer holds the
// server's objects, each in every index. Until then the object is stored,
// and its handlers told, but an index whose function failed on it leaves
// it out.
var ErrIndexerFailed = errors.New("the informer's indexer failed to apply a change")

// guardedIndexer is the indexer of this package's informers: client-go's,
// whose index functions run wrapped so that an error they return while a
// change is written, on which client-go's indexer would panic, is recorded
// instead, the object left out of that index, and reported (see
// ErrIndexerFailed). It keeps every index consistent: an index never
// holds a stale entry, so ByIndex never returns a key's old object or a
// missing one.
type guardedIndexer struct {
	clientgocache.Indexer

	// mu is held to write, and to read through an index function (Index),
	// so that index functions see whether a write runs. It guards what
	// follows.
	mu sync.RWMutex
	// report is told of each write that met failures; nil: nobody is.
	report func(error)
	// writing: a write runs; index functions record their errors in
	// failed and return no values.
	writing bool
	failed  []indexFailure
	// unindexed holds, by index name, the keys of the stored objects that
	// index leaves out because its function failed on them.
	unindexed map[string]map[string]struct{}
	// indexers are the index functions as given (GetIndexers).
	indexers Indexers
	// compact, when set (before Run), is the store: it leaves an object
	// out of an index whose function fails and keeps every index free of
	// stale entries itself, so writes go straight to it (see
	// compactWrite).
	compact *compactStore
	// storeOptions are client-go's store options the indexer was made
	// with, kept to make it again (see storeFor).
	storeOptions []clientgocache.StoreOption
}

// indexFailure is an index function's error on an object during a write.
type indexFailure struct {
	index string
	obj   interface{}
	err   error
}

// newGuardedIndexer returns an empty guardedIndexer keyed as the
// informers' stores are, with indexers and client-go's store options.
func newGuardedIndexer(indexers Indexers, opts ...clientgocache.StoreOption) *guardedIndexer {
	g := &guardedIndexer{indexers: maps.Clone(indexers), storeOptions: opts}
	if g.indexers == nil {
		g.indexers = Indexers{}
	}
	g.Indexer = clientgocache.NewIndexer(informerKeyFunc, g.wrap(indexers), opts...)
	return g
}

// wrap returns indexers with each function wrapped: during a write, an
// error is recorded and the object gets no values.
func (g *guardedIndexer) wrap(indexers Indexers) Indexers {
	out := make(Indexers, len(indexers))
	for name, f := range indexers {
		out[name] = func(obj interface{}) ([]string, error) {
			values, err := f(obj)
			if err == nil || !g.writing {
				return values, err
			}
			g.failed = append(g.failed, indexFailure{index: name, obj: obj, err: err})
			return nil, nil
		}
	}
	return out
}

// run runs op, a write, with g.mu held, and returns its error and the
// index functions' failures.
func (g *guardedIndexer) run(op func() error) ([]indexFailure, error) {
	g.writing = true
	err := op()
	g.writing = false
	failed := g.failed
	g.failed = nil
	return failed, err
}

// Add and Update store obj (see upsert).
func (g *guardedIndexer) Add(obj interface{}) error    { return g.upsert(obj, g.Indexer.Add) }
func (g *guardedIndexer) Update(obj interface{}) error { return g.upsert(obj, g.Indexer.Update) }

// upsert stores obj with op, client-go's Add or Update.
func (g *guardedIndexer) upsert(obj interface{}, op func(interface{}) error) error {
	if g.compact != nil {
		return g.compactWrite(func() error { return op(obj) })
	}
	g.mu.Lock()
	failed, err := g.run(func() error { return op(obj) })
	failed = g.settle(obj, obj, failed)
	report := g.report
	g.mu.Unlock()
	g.tell(report, failed)
	return err
}

// Delete removes obj (see upsert).
func (g *guardedIndexer) Delete(obj interface{}) error {
	if g.compact != nil {
		return g.compactWrite(func() error { return g.Indexer.Delete(obj) })
	}
	g.mu.Lock()
	failed, err := g.run(func() error { return g.Indexer.Delete(obj) })
	failed = g.settle(obj, nil, failed)
	report := g.report
	g.mu.Unlock()
	g.tell(report, failed)
	return err
}

// Replace makes the store hold list, every index rebuilt without the
// objects its function fails on.
func (g *guardedIndexer) Replace(list []interface{}, resourceVersion string) error {
	if g.compact != nil {
		return g.compactWrite(func() error { return g.Indexer.Replace(list, resourceVersion) })
	}
	g.mu.Lock()
	failed, err := g.run(func() error { return g.Indexer.Replace(list, resourceVersion) })
	if err == nil {
		g.unindexed = nil
		g.markAll(failed)
	}
	report := g.report
	g.mu.Unlock()
	g.tell(report, failed)
	return err
}

// AddIndexers adds indexes, leaving out the stored objects their
// functions fail on.
func (g *guardedIndexer) AddIndexers(indexers Indexers) error {
	if g.compact != nil {
		return g.compactWrite(func() error {
			err := g.Indexer.AddIndexers(indexers)
			if err == nil || errors.Is(err, ErrIndexerFailed) {
				g.mu.Lock()
				maps.Copy(g.indexers, indexers)
				g.mu.Unlock()
			}
			return err
		})
	}
	g.mu.Lock()
	failed, err := g.run(func() error { return g.Indexer.AddIndexers(g.wrap(indexers)) })
	if err == nil {
		maps.Copy(g.indexers, indexers)
		g.markAll(failed)
	}
	report := g.report
	g.mu.Unlock()
	g.tell(report, failed)
	return err
}

// Index is client-go's, with an index function's error returned.
func (g *guardedIndexer) Index(indexName string, obj interface{}) ([]interface{}, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.Indexer.Index(indexName, obj)
}

// GetIndexers returns the index functions as they were given.
func (g *guardedIndexer) GetIndexers() Indexers {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return maps.Clone(g.indexers)
}

// reportTo has g's failures reported to report from now on.
func (g *guardedIndexer) reportTo(report func(error)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.report = report
}

// settle brings unindexed up to date after a write of obj that left
// stored (nil: nothing) under obj's key and met failed, and rebuilds the
// indexes if one may hold a stale entry: an index function failed on the
// object the key held before, which that index held (client-go then
// cannot take its entries out). It returns failed and the rebuild's.
// Without failures, and with every object indexed, it does nothing.
func (g *guardedIndexer) settle(obj, stored interface{}, failed []indexFailure) []indexFailure {
	if len(failed) == 0 && len(g.unindexed) == 0 {
		return nil
	}
	key, err := informerKeyFunc(obj)
	if err != nil {
		// The write failed before any index function ran.
		return failed
	}
	var left map[string]bool // the indexes that leave stored out
	stale := false
	for i, f := range failed {
		if stored != nil && repr.Same(f.obj, stored) && !oldCallOf(failed, i) {
			if left == nil {
				left = map[string]bool{}
			}
			left[f.index] = true
		} else if !g.isUnindexed(f.index, key) {
			stale = true
		}
	}
	for name, keys := range g.unindexed {
		if !left[name] {
			delete(keys, key)
		}
	}
	for name := range left {
		g.mark(name, key)
	}
	if stale {
		failed = append(failed, g.reindex()...)
	}
	return failed
}

// oldCallOf says whether failed[i], a failure on the object a write
// stored, is that of the call on the object the key held before, which
// was the same one: client-go calls an index function on the old object,
// then on the new one, so the call on the new one failed next.
func oldCallOf(failed []indexFailure, i int) bool {
	next := i + 1
	return next < len(failed) && failed[next].index == failed[i].index && repr.Same(failed[next].obj, failed[i].obj)
}

// reindex rebuilds every index from the stored objects, as client-go's
// Replace of what the store holds does, leaving out (and marking) those
// an index function fails on, and returns those failures. g.mu is held.
func (g *guardedIndexer) reindex() []indexFailure {
	// The stored objects' keys were made once: making them again cannot
	// fail, nor can the Replace.
	failed, _ := g.run(func() error {
		return g.Indexer.Replace(g.Indexer.List(), g.Indexer.LastStoreSyncResourceVersion())
	})
	g.unindexed = nil
	g.markAll(failed)
	return failed
}

// markAll marks the objects of failed as left out of their indexes.
func (g *guardedIndexer) markAll(failed []indexFailure) {
	for _, f := range failed {
		if key, err := informerKeyFunc(f.obj); err == nil {
			g.mark(f.index, key)
		}
	}
}

// mark marks the object under key as left out of index.
func (g *guardedIndexer) mark(index, key string) {
	if g.unindexed == nil {
		g.unindexed = map[string]map[string]struct{}{}
	}
	if g.unindexed[index] == nil {
		g.unindexed[index] = map[string]struct{}{}
	}
	g.unindexed[index][key] = struct{}{}
}

// isUnindexed says whether index leaves out the object under key.
func (g *guardedIndexer) isUnindexed(index, key string) bool {
	_, ok := g.unindexed[index][key]
	return ok
}

// tell reports failed, the failures of one write, to report (if any) as
// one error, wrapping ErrIndexerFailed and the first index function's
// error.
func (g *guardedIndexer) tell(report func(error), failed []indexFailure) {
	if len(failed) == 0 || report == nil {
		return
	}
	f := failed[0]
	key, err := informerKeyFunc(f.obj)
	if err != nil {
		key = fmt.Sprintf("an object of type %T", f.obj)
	}
	more := ""
	if n := len(failed) - 1; n > 0 {
		more = fmt.Sprintf(" (and %d more failures)", n)
	}
	report(fmt.Errorf("%w: index %q failed on %s%s: %w", ErrIndexerFailed, f.index, key, more, f.err))
}
