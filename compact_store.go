package cache

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kreflector/cache/internal/compact"
)

// NewCompactIndexer returns an Indexer keyed by keyFunc, with indexers,
// that holds objects encoded and compressed (see CompactOptions for what
// that means for reads). It is safe for concurrent use, and implements
// ResourceVersionUpdater. An index function's error leaves the object out
// of that index (client-go's indexer panics) and is returned by the write
// that met it, wrapping ErrIndexerFailed; the object is stored.
func NewCompactIndexer(keyFunc KeyFunc, indexers Indexers, o CompactOptions) Indexer {
	return newCompactStore(keyFunc, indexers, o)
}

// compactStore is NewCompactIndexer's store.
type compactStore struct {
	keyFunc KeyFunc
	opts    CompactOptions
	cache   *readCache
	packers sync.Map // reflect.Type → *packer (nil: no codec)
	// notifies is set (before use) when the store is an informer's:
	// records it replaces or removes are still to be read by the
	// handlers, so their objects are retired from the read cache rather
	// than dropped.
	notifies bool
	// packed and stored place records in the order they were packed, by
	// the estimated size of their objects (see stage): packed is where
	// the next one goes, stored is the furthest one stored.
	packed, stored atomic.Int64

	mu sync.RWMutex // guards what follows
	// items are the records by key; indices the keys by index name and
	// value; names and funcs the indexes, in the order of records' idx.
	items   map[string]*compactRecord
	indices map[string]map[string]sets.Set[string]
	names   []string
	funcs   []IndexFunc
	rv      string
	// held and encoded are the records' heap and how many hold bytes.
	held    int64
	encoded int
	// replaces numbers the Replaces, for the records' marks; widest is
	// the most records held since the maps were made (see shrink).
	replaces uint32
	widest   int
	// position, if set, is told each resourceVersion reached: an empty
	// client-go store made with the informer's store options, whose
	// metrics (the store resourceVersion gauge of client-go's
	// InformerMetricsProvider) it keeps as client-go's indexer would.
	position interface{ Bookmark(rv string) }
}

var (
	_ Indexer                = &compactStore{}
	_ ResourceVersionUpdater = &compactStore{}
)

func newCompactStore(keyFunc KeyFunc, indexers Indexers, o CompactOptions) *compactStore {
	s := &compactStore{
		keyFunc: keyFunc,
		opts:    o,
		cache:   newReadCache(o.readCacheBytes(0), o.handoffBytes(0)),
		items:   map[string]*compactRecord{},
		indices: map[string]map[string]sets.Set[string]{},
	}
	for _, name := range slices.Sorted(maps.Keys(indexers)) {
		s.names = append(s.names, name)
		s.funcs = append(s.funcs, indexers[name])
		s.indices[name] = map[string]sets.Set[string]{}
	}
	return s
}

// packerFor returns the packer of obj's Go type, nil if it has no codec.
func (s *compactStore) packerFor(obj any) *packer {
	t := reflect.TypeOf(obj)
	if p, ok := s.packers.Load(t); ok {
		return p.(*packer)
	}
	var p *packer
	if c := compact.For(obj); c != nil {
		p = &packer{codec: c, cache: s.cache}
		if !s.opts.Uncompressed {
			p.squeezer = compact.NewSqueezer()
		}
	}
	actual, _ := s.packers.LoadOrStore(t, p)
	return actual.(*packer)
}

// pack makes obj's record: its key, resourceVersion and index values
// computed now, its bytes encoded (the decoded object kept in the read
// cache, since it is about to be read). A record is returned as it is.
// It may run on any goroutine, alongside writes.
func (s *compactStore) pack(obj any) (*compactRecord, error) {
	if r, ok := obj.(*compactRecord); ok {
		return r, nil
	}
	r, err := s.prepare(obj)
	if err != nil || r.pk == nil {
		return r, err
	}
	return r, s.encode(r, obj)
}

// prepare is pack's first step, the one that runs the key and index
// functions: obj's record without its bytes (complete for a type with no
// codec, which keeps obj itself).
func (s *compactStore) prepare(obj any) (*compactRecord, error) {
	key, err := s.keyFunc(obj)
	if err != nil {
		return nil, KeyError{Obj: obj, Err: err}
	}
	r := &compactRecord{key: key, uid: uidHash(obj)}
	r.setRV(resourceVersionOf(obj))
	s.mu.RLock()
	names, funcs := s.names, s.funcs
	s.mu.RUnlock()
	r.setIndex(indexValues(key, obj, names, funcs))
	r.pk = s.packerFor(obj)
	if r.pk == nil {
		r.changeOdd(func(o *recordOdd) { o.raw = obj })
	}
	return r, nil
}

// encode is pack's second step, which calls nothing of the user's: r's
// bytes, from obj. It is safe to run for many records at once.
func (s *compactStore) encode(r *compactRecord, obj any) error {
	key, data, plain, err := r.pk.pack(r.key, obj)
	if err != nil {
		return fmt.Errorf("packing %s: %w", r.key, err)
	}
	r.key, r.data, r.plain = key, data, uint32(plain)
	s.stage(r, obj, r.decodedSize())
	return nil
}

// stage keeps obj, r's object just packed, for its first readers. A store
// of its own puts it in the read cache at once. An informer's store is
// written to later, once r has come through the informer's queue, so r
// carries obj there (fresh), to be given to the read cache when stored
// and so to the handlers: but only while the objects carried through the
// queue stay within the read cache's bound, counted by position (what
// was packed ahead of r, less what has been stored). Records that never
// reach the store (a LIST that failed half-way) are simply dropped: the
// next record stored moves the count on past them.
func (s *compactStore) stage(r *compactRecord, obj any, size int64) {
	if !s.notifies {
		s.cache.put(r, obj, size)
		return
	}
	r.pos = s.packed.Add(size)
	if carry := s.cache.limit.Load(); carry > 0 && r.pos-s.stored.Load() <= carry {
		r.fresh.Store(&hotEntry{rec: r, obj: obj, size: size})
	}
}

// settle is what storing r does beyond the maps: the object it carries
// goes to the read cache, and the count of what is carried moves on.
func (s *compactStore) settle(r *compactRecord) {
	for {
		at := s.stored.Load()
		if r.pos <= at || s.stored.CompareAndSwap(at, r.pos) {
			break
		}
	}
	if h := r.fresh.Swap(nil); h != nil {
		s.cache.put(r, h.obj, h.size)
	}
}

// Add and Update store obj's record.
func (s *compactStore) Add(obj any) error    { return s.write(obj) }
func (s *compactStore) Update(obj any) error { return s.write(obj) }

func (s *compactStore) write(obj any) error {
	r, err := s.pack(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	old := s.put(r)
	s.noteRV(r.resourceVersion(), obj)
	// As stored: AddIndexers may add its own failures to r once the lock
	// is let go, and returns those itself.
	failed := r.indexErr()
	s.mu.Unlock()
	if old != nil && old != r {
		s.leave(old)
	}
	return failed
}

// Delete removes the record under obj's key (obj may be a record). The
// delete that leaves a quarter of the most the store held makes its maps
// afresh (see shrink).
func (s *compactStore) Delete(obj any) error {
	key, err := s.keyOf(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	old := s.items[key]
	if old != nil {
		s.remove(old)
		delete(s.items, key)
		s.shrink()
	}
	r, isRecord := obj.(*compactRecord)
	if isRecord {
		s.noteRV(r.resourceVersion(), obj)
	} else {
		s.noteRV(resourceVersionOf(obj), obj)
	}
	s.mu.Unlock()
	if old != nil {
		s.leave(old)
	}
	if isRecord && r != old {
		// The deleted object, for the handlers' OnDelete.
		s.settle(r)
		s.leave(r)
	}
	return nil
}

// resize bounds the read cache to what the records now hold (see
// CompactOptions.ReadCacheBytes). s.mu is held.
func (s *compactStore) resize() {
	if s.opts.ReadCacheBytes == 0 {
		s.cache.limit.Store(s.opts.readCacheBytes(s.held))
		s.cache.handoffs.limit.Store(s.opts.handoffBytes(s.held))
	}
}

// leave lets the read cache know that r left the store.
func (s *compactStore) leave(r *compactRecord) {
	if s.notifies {
		s.cache.retire(r)
		return
	}
	s.cache.drop(r)
}

// noteRV records rv, written with obj, as the resourceVersion reached,
// as client-go's store does for every object that has metadata. s.mu is
// held.
func (s *compactStore) noteRV(rv string, obj any) {
	if _, isRecord := obj.(*compactRecord); isRecord || hasMeta(obj) {
		s.reached(rv)
	}
}

// reached records rv as the resourceVersion reached. s.mu is held.
func (s *compactStore) reached(rv string) {
	s.rv = rv
	if s.position != nil {
		s.position.Bookmark(rv)
	}
}

func (s *compactStore) keyOf(obj any) (string, error) {
	if r, ok := obj.(*compactRecord); ok {
		return r.key, nil
	}
	key, err := s.keyFunc(obj)
	if err != nil {
		return "", KeyError{Obj: obj, Err: err}
	}
	return key, nil
}

// put stores r in place of what its key held, and returns that. s.mu is
// held.
func (s *compactStore) put(r *compactRecord) *compactRecord {
	old := s.items[r.key]
	if old != nil {
		s.remove(old)
	}
	if r.indexed() != len(s.funcs) && len(s.funcs) > 0 {
		s.reindexRecord(r)
	}
	s.items[r.key] = r
	s.settle(r)
	s.held += r.size()
	s.resize()
	if r.pk != nil {
		s.encoded++
	}
	s.indexRecord(r)
	return old
}

// indexRecord adds r's key under each of its index values. s.mu is held.
func (s *compactStore) indexRecord(r *compactRecord) {
	for i, name := range s.names {
		for _, v := range r.valuesAt(i) {
			s.indexAdd(name, v, r.key)
		}
	}
}

// remove takes r out of the indexes and the figures (not out of items).
// s.mu is held.
func (s *compactStore) remove(r *compactRecord) {
	s.held -= r.size()
	s.resize()
	if r.pk != nil {
		s.encoded--
	}
	for i, name := range s.names[:min(len(s.names), r.indexed())] {
		for _, v := range r.valuesAt(i) {
			s.indexDel(name, v, r.key)
		}
	}
}

func (s *compactStore) indexAdd(name, value, key string) {
	set := s.indices[name][value]
	if set == nil {
		set = sets.New[string]()
		s.indices[name][value] = set
	}
	set.Insert(key)
}

func (s *compactStore) indexDel(name, value, key string) {
	set := s.indices[name][value]
	set.Delete(key)
	if len(set) == 0 {
		delete(s.indices[name], value)
	}
}

// reindexRecord computes r's index values again, for the store's index
// functions now (indexes were added since r was packed): r is decoded.
// A record whose bytes do not decode is left out of every index.
func (s *compactStore) reindexRecord(r *compactRecord) {
	obj, err := r.object()
	if err != nil {
		r.setIndex(recordIndex{many: make([][]string, len(s.funcs))}, fmt.Errorf("%w: %s: %w", ErrIndexerFailed, r.key, err))
		return
	}
	r.setIndex(indexValues(r.key, obj, s.names, s.funcs))
}

// hasMeta says whether obj has object metadata.
func hasMeta(obj any) bool {
	_, err := meta.Accessor(obj)
	return err == nil
}
