package cache

import (
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/util/sets"
	clientgofeatures "k8s.io/client-go/features"
	"k8s.io/klog/v2"
)

// List returns every object, decoded where the read cache has not got
// it, in no particular order.
func (s *compactStore) List() []any {
	return s.objects(s.records())
}

// records returns every record.
func (s *compactStore) records() []*compactRecord {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Collect(maps.Values(s.items))
}

// objects decodes recs outside the lock, in their order. A read of many
// (List, ByIndex, Index) decodes on up to GOMAXPROCS goroutines, each
// taking the next block of records as it finishes one, all joined before
// it returns: a record the read cache has not got is a whole decode (tens
// of µs for a realistic Pod), so a read of thousands would otherwise take
// one core for tens of milliseconds. A record that no longer decodes (it
// decoded when written: not expected) is logged and left out.
func (s *compactStore) objects(recs []*compactRecord) []any {
	out := make([]any, len(recs))
	workers := min(runtime.GOMAXPROCS(0), len(recs)/decodeBlock)
	if workers <= 1 {
		decodeInto(out, recs)
		return slices.DeleteFunc(out, isUndecoded)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				hi := int(next.Add(decodeBlock))
				lo := hi - decodeBlock
				if lo >= len(recs) {
					return
				}
				hi = min(hi, len(recs))
				decodeInto(out[lo:hi], recs[lo:hi])
			}
		})
	}
	wg.Wait()
	return slices.DeleteFunc(out, isUndecoded)
}

// decodeBlock is how many records a goroutine of a read of many decodes
// at a time, and a read of fewer than two blocks stays on its caller's
// goroutine.
const decodeBlock = 16

// undecoded marks, in objects' result, a record that did not decode.
type undecoded struct{}

func isUndecoded(obj any) bool { _, ok := obj.(undecoded); return ok }

// decodeInto decodes recs into out, undecoded where a record fails.
func decodeInto(out []any, recs []*compactRecord) {
	for i, r := range recs {
		obj, err := r.object()
		if err != nil {
			klog.Background().Error(err, "A compact store's record does not decode", "key", r.key)
			out[i] = undecoded{}
			continue
		}
		out[i] = obj
	}
}

// ListKeys returns every key.
func (s *compactStore) ListKeys() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Collect(maps.Keys(s.items))
}

// Get returns the object under obj's key.
func (s *compactStore) Get(obj any) (any, bool, error) {
	key, err := s.keyOf(obj)
	if err != nil {
		return nil, false, err
	}
	return s.GetByKey(key)
}

// GetByKey returns the object under key, decoded if the read cache has
// not got it.
func (s *compactStore) GetByKey(key string) (any, bool, error) {
	r, ok := s.record(key)
	if !ok {
		return nil, false, nil
	}
	obj, err := r.object()
	if err != nil {
		return nil, false, fmt.Errorf("reading %s from a compact store: %w", key, err)
	}
	return obj, true, nil
}

// keepable returns the record under key for a relist to keep in place
// of the listed copy: not one an index function failed on (when it was
// packed, or when AddIndexers indexed it). A record's index values were
// computed then, and a kept record is not indexed again; the listed copy
// is, so a failure that has passed (the cause of the relist, often) is
// not kept with it.
func (s *compactStore) keepable(key string) (*compactRecord, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.items[key]
	if !ok || r.indexErr() != nil {
		return nil, false
	}
	return r, true
}

// record returns the record under key.
func (s *compactStore) record(key string) (*compactRecord, bool) {
	s.mu.RLock()
	r, ok := s.items[key]
	s.mu.RUnlock()
	return r, ok
}

// Index returns the objects that share a value of index with obj.
func (s *compactStore) Index(indexName string, obj any) ([]any, error) {
	s.mu.RLock()
	f, known := s.indexFunc(indexName)
	s.mu.RUnlock()
	if !known {
		return nil, fmt.Errorf("Index with name %s does not exist", indexName)
	}
	values, err := f(obj)
	if err != nil {
		return nil, err
	}
	keys := sets.New[string]()
	s.mu.RLock()
	for _, v := range values {
		keys = keys.Union(s.indices[indexName][v])
	}
	recs := s.recordsOf(keys.UnsortedList())
	s.mu.RUnlock()
	return s.objects(recs), nil
}

func (s *compactStore) indexFunc(name string) (IndexFunc, bool) {
	i := slices.Index(s.names, name)
	if i < 0 {
		return nil, false
	}
	return s.funcs[i], true
}

// recordsOf returns the records under keys. s.mu is held.
func (s *compactStore) recordsOf(keys []string) []*compactRecord {
	out := make([]*compactRecord, 0, len(keys))
	for _, k := range keys {
		if r, ok := s.items[k]; ok {
			out = append(out, r)
		}
	}
	return out
}

// IndexKeys returns the keys under value in index, sorted (as
// client-go's indexer returns them).
func (s *compactStore) IndexKeys(indexName, indexedValue string) ([]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if _, ok := s.indices[indexName]; !ok {
		return nil, fmt.Errorf("Index with name %s does not exist", indexName)
	}
	return sets.List(s.indices[indexName][indexedValue]), nil
}

// ListIndexFuncValues returns every value of index, in no order; none
// (an empty slice, as client-go's) for an index that does not exist.
func (s *compactStore) ListIndexFuncValues(indexName string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	index := s.indices[indexName]
	return slices.AppendSeq(make([]string, 0, len(index)), maps.Keys(index))
}

// ByIndex returns the objects under value in index.
func (s *compactStore) ByIndex(indexName, indexedValue string) ([]any, error) {
	s.mu.RLock()
	if _, ok := s.indices[indexName]; !ok {
		s.mu.RUnlock()
		return nil, fmt.Errorf("Index with name %s does not exist", indexName)
	}
	recs := s.recordsOf(s.indices[indexName][indexedValue].UnsortedList())
	s.mu.RUnlock()
	return s.objects(recs), nil
}

// GetIndexers returns the index functions.
func (s *compactStore) GetIndexers() Indexers {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(Indexers, len(s.names))
	for i, n := range s.names {
		out[n] = s.funcs[i]
	}
	return out
}

// AddIndexers adds indexes (a name already in use is an error, as in
// client-go) and computes their values for every stored object, decoding
// each one the read cache has not got.
func (s *compactStore) AddIndexers(indexers Indexers) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name := range indexers {
		if slices.Contains(s.names, name) {
			return fmt.Errorf("indexer conflict: %v", name)
		}
	}
	names := slices.Sorted(maps.Keys(indexers))
	funcs := make([]IndexFunc, len(names))
	for i, name := range names {
		funcs[i] = indexers[name]
		s.indices[name] = map[string]sets.Set[string]{}
	}
	var errs []error
	for _, r := range s.items {
		if err := s.indexMore(r, names, funcs); err != nil {
			errs = append(errs, err)
		}
	}
	s.names, s.funcs = append(s.names, names...), append(s.funcs, funcs...)
	return errors.Join(errs...)
}

// indexMore adds r to the indexes names, new, whose functions are funcs.
// s.mu is held.
func (s *compactStore) indexMore(r *compactRecord, names []string, funcs []IndexFunc) error {
	s.held -= r.size()
	defer func() { s.held += r.size() }()
	all := r.allValues()
	all = append(all, make([][]string, len(s.funcs)-len(all))...)
	failed := r.indexErr()
	obj, err := r.object()
	if err != nil {
		err = fmt.Errorf("%w: %s: %w", ErrIndexerFailed, r.key, err)
		r.setIndex(indexOf(append(all, make([][]string, len(funcs))...)), errors.Join(failed, err))
		return err
	}
	more, err := indexValues(r.key, obj, names, funcs)
	added := more.many
	if added == nil {
		added = more.split(len(funcs))
	}
	for i, name := range names {
		for _, v := range added[i] {
			s.indexAdd(name, v, r.key)
		}
	}
	if err != nil {
		// Recorded, as a failure when packed is: a relist does not keep
		// the record, but indexes its listed copy again.
		failed = errors.Join(failed, err)
	}
	r.setIndex(indexOf(append(all, added...)), failed)
	return err
}

// Resync does nothing: a store has no one to notify.
func (s *compactStore) Resync() error { return nil }

// Bookmark records rv as the resourceVersion reached.
func (s *compactStore) Bookmark(rv string) { s.UpdateResourceVersion(rv) }

// UpdateResourceVersion records the resourceVersion the Reflector reached.
func (s *compactStore) UpdateResourceVersion(rv string) {
	s.mu.Lock()
	s.reached(rv)
	s.mu.Unlock()
}

// LastStoreSyncResourceVersion is the resourceVersion of the last
// Replace, bookmark or watch event applied.
// Like client-go's, it is "" while client-go's AtomicFIFO gate is off.
func (s *compactStore) LastStoreSyncResourceVersion() string {
	if !clientgofeatures.FeatureGates().Enabled(clientgofeatures.AtomicFIFO) {
		return ""
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rv
}

// stats returns the store's figures.
func (s *compactStore) stats() CompactStats {
	s.mu.RLock()
	st := CompactStats{Objects: len(s.items), Encoded: s.encoded, BytesHeld: s.held}
	s.mu.RUnlock()
	st.ReadCacheBytes = s.cache.bytes()
	st.ReadHits, st.ReadMisses, st.Decodes = s.cache.hits.Load(), s.cache.misses.Load(), s.cache.decodes.Load()
	s.packers.Range(func(_, p any) bool {
		if pk := p.(*packer); pk != nil && pk.squeezer != nil && pk.squeezer.Trained() {
			st.Dictionary = true
		}
		return true
	})
	return st
}
