package cache

import (
	"errors"
	goruntime "runtime"
	"strings"
	"sync"

	clientgocache "k8s.io/client-go/tools/cache"
)

// storeFor makes g's store a compact one with *o, or (o nil) client-go's
// indexer, keeping the indexes added so far. It is called before Run (as
// the informer's Reflector options are set), while the store is empty.
func (g *guardedIndexer) storeFor(o *CompactOptions) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if o == nil {
		if g.compact != nil {
			g.compact = nil
			g.Indexer = clientgocache.NewIndexer(informerKeyFunc, g.wrap(g.indexers), g.storeOptions...)
		}
		return
	}
	g.compact = newCompactStore(informerKeyFunc, g.indexers, *o)
	g.compact.notifies = true
	if len(g.storeOptions) > 0 {
		g.compact.position = clientgocache.NewStore(informerKeyFunc, g.storeOptions...).(interface{ Bookmark(string) })
	}
	g.Indexer = g.compact
}

// packer returns what packs objects into records of g's compact store
// (nil without one), transform (if any) first.
func (g *guardedIndexer) packer(transform TransformFunc) *recordPacker {
	if g.compact == nil {
		return nil
	}
	return &recordPacker{transform: transform, store: g.compact}
}

// recordPacker packs objects into an informer's compact store's records:
// the informer's transform first, then the record. Records pass through,
// and so do tombstones.
type recordPacker struct {
	transform TransformFunc
	store     *compactStore
}

// one packs obj: the informer queue's transform.
func (p *recordPacker) one(obj any) (any, error) {
	item, todo, err := p.prepare(obj)
	if err != nil || todo.r == nil {
		return item, err
	}
	return item, p.store.encode(todo.r, todo.obj)
}

// unencoded is a record prepared and not yet encoded, with its object.
type unencoded struct {
	r   *compactRecord
	obj any
}

// prepare runs the transform and the record's first step on obj (see
// compactStore.prepare): item is what stands for obj (its record, or obj
// itself for a record or a tombstone), todo the record left to encode,
// if any.
func (p *recordPacker) prepare(obj any) (item any, todo unencoded, err error) {
	if _, ok := obj.(*compactRecord); ok {
		return obj, unencoded{}, nil
	}
	if p.transform != nil {
		if obj, err = p.transform(obj); err != nil {
			return nil, unencoded{}, err
		}
	}
	if _, ok := obj.(clientgocache.DeletedFinalStateUnknown); ok {
		return obj, unencoded{}, nil
	}
	r, err := p.store.prepare(obj)
	if err != nil {
		return nil, unencoded{}, err
	}
	if r.pk == nil {
		return r, unencoded{}, nil
	}
	return r, unencoded{r: r, obj: obj}, nil
}

// page packs a LIST page's items in place. The transform and the key and
// index functions run on the calling goroutine, in order, as they would
// in client-go; encoding and compressing, which call nothing of the
// user's, run in GOMAXPROCS runs side by side, all joined before page
// returns. The first failure by position is returned.
func (p *recordPacker) page(items []any) error {
	var todo []unencoded
	for i, it := range items {
		item, t, err := p.prepare(it)
		if err != nil {
			return err
		}
		items[i] = item
		if t.r != nil {
			todo = append(todo, t)
		}
	}
	parts := max(1, min(goruntime.GOMAXPROCS(0), len(todo)/packRun))
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for i := range parts {
		run := func() { errs[i] = p.encodeAll(todo[i*len(todo)/parts : (i+1)*len(todo)/parts]) }
		if i == parts-1 {
			run()
		} else {
			wg.Go(run)
		}
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// packRun is the fewest records encoded on a goroutine of their own.
const packRun = 64

// encodeAll encodes todo, stopping at the first failure.
func (p *recordPacker) encodeAll(todo []unencoded) error {
	for _, t := range todo {
		if err := p.store.encode(t.r, t.obj); err != nil {
			return err
		}
	}
	return nil
}

// compactWrite runs op, a write to the compact store: an index function's
// failure (the object is stored, out of that index) is reported, as the
// guarded indexer reports it, and not returned.
func (g *guardedIndexer) compactWrite(op func() error) error {
	err := op()
	if err == nil || !isIndexFailure(err) {
		return err
	}
	g.mu.RLock()
	report := g.report
	g.mu.RUnlock()
	if report != nil {
		report(err)
	}
	return nil
}

// isIndexFailure says whether err, a compact store write's error, is
// index functions' failures: the store returns its other errors (keys,
// encoding) on their own, never joined with those.
func isIndexFailure(err error) bool { return errors.Is(err, ErrIndexerFailed) }

// heldForHandlers returns what g holds under key as the handlers are to
// get it: a compact store's record (decoded at delivery), or the object.
func (g *guardedIndexer) heldForHandlers(key string) (any, bool) {
	if g.compact != nil {
		r, ok := g.compact.record(key)
		return r, ok
	}
	obj, ok, err := g.GetByKey(key)
	return obj, ok && err == nil
}

// heldForRelist is heldForHandlers for a relist that would keep what g
// holds: a compact store's record only if it may be kept (see
// compactStore.keepable).
func (g *guardedIndexer) heldForRelist(key string) (any, bool) {
	if g.compact != nil {
		r, ok := g.compact.keepable(key)
		return r, ok
	}
	return g.heldForHandlers(key)
}

// replaceForHandlers is the compact store's replaceForHandlers (ok
// false, nothing done, without a compact store).
func (g *guardedIndexer) replaceForHandlers(list []any, rv string) (olds []any, gone []clientgocache.DeletedFinalStateUnknown, ok bool, err error) {
	if g.compact == nil {
		return nil, nil, false, nil
	}
	err = g.compactWrite(func() error {
		var err error
		olds, gone, err = g.compact.replaceForHandlers(list, rv)
		return err
	})
	return olds, gone, true, err
}

// allForHandlers is every held object as the handlers are to get them.
func (g *guardedIndexer) allForHandlers() []any {
	if g.compact == nil {
		return g.List()
	}
	recs := g.compact.records()
	out := make([]any, len(recs))
	for i, r := range recs {
		out[i] = r
	}
	return out
}

// compactStats is the compact store's figures, nil without one.
func (g *guardedIndexer) compactStats() *CompactStats {
	if g.compact == nil {
		return nil
	}
	st := g.compact.stats()
	return &st
}

// handlerView is what the delta applier asks of an informer's indexer,
// so that a compact store's objects reach the handlers undecoded.
type handlerView interface {
	heldForHandlers(key string) (any, bool)
	heldForRelist(key string) (any, bool)
	allForHandlers() []any
	// replaceForHandlers, where ok, has replaced the store's contents
	// with list and returns what a ReplacedAll tells the handlers (see
	// compactStore.replaceForHandlers).
	replaceForHandlers(list []any, rv string) (olds []any, gone []clientgocache.DeletedFinalStateUnknown, ok bool, err error)
}

// recordKeys wraps a queue's key function so that records are keyed by
// the key they carry (batched by name when atomic, as batchKey does).
func recordKeys(base clientgocache.KeyFunc, atomic bool) clientgocache.KeyFunc {
	return func(obj any) (string, error) {
		r, ok := obj.(*compactRecord)
		if !ok {
			return base(obj)
		}
		if atomic {
			return r.key[strings.LastIndexByte(r.key, '/')+1:], nil
		}
		return r.key, nil
	}
}

// packWith has r pack each LIST page's objects with p as the page
// arrives (nil: none), after the intake's other steps.
func (r *Reflector) packWith(p *recordPacker) {
	if p == nil {
		return
	}
	if r.in == nil {
		r.in = &intake{adoptMutable: !storeTransforms(r.store)}
	}
	r.in.pack = p
}

// packAll packs items in place (see packWith and recordPacker.page).
func (in *intake) packAll(items []any) error {
	if in == nil || in.pack == nil {
		return nil
	}
	return in.pack.page(items)
}
