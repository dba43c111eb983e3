package cache

import (
	"errors"
	"strings"

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
	g.Indexer = g.compact
}

// packer returns the function that packs an object into a record of g's
// compact store (nil without one): transform (if any) first, then the
// encoding; a record passes through.
func (g *guardedIndexer) packer(transform TransformFunc) TransformFunc {
	cs := g.compact
	if cs == nil {
		return nil
	}
	return func(obj any) (any, error) {
		if _, ok := obj.(*compactRecord); ok {
			return obj, nil
		}
		if transform != nil {
			var err error
			if obj, err = transform(obj); err != nil {
				return nil, err
			}
		}
		if _, ok := obj.(clientgocache.DeletedFinalStateUnknown); ok {
			return obj, nil
		}
		return cs.pack(obj)
	}
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
	allForHandlers() []any
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

// packWith has r pack each LIST page's objects with pack as the page
// arrives (nil: none), after the intake's other steps.
func (r *Reflector) packWith(pack TransformFunc) {
	if pack == nil {
		return
	}
	if r.in == nil {
		r.in = &intake{adoptMutable: !storeTransforms(r.store)}
	}
	r.in.pack = pack
}

// packAll packs items in place (see packWith).
func (in *intake) packAll(items []any) error {
	if in == nil || in.pack == nil {
		return nil
	}
	for i, it := range items {
		rec, err := in.pack(it)
		if err != nil {
			return err
		}
		items[i] = rec
	}
	return nil
}
