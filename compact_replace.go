package cache

import (
	"errors"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
	clientgocache "k8s.io/client-go/tools/cache"
)

// Replace makes the store hold exactly list (later duplicates win), at
// resourceVersion. Records are packed before the lock is taken; the
// store is then changed in place (see replace).
func (s *compactStore) Replace(list []any, resourceVersion string) error {
	_, _, err := s.replace(list, resourceVersion, false)
	return err
}

// replaceForHandlers is Replace for an informer's ReplacedAll: besides,
// it returns what the store held, before, under the key of each element
// of list (nil: nothing), and a tombstone, sorted by key, for each record
// it held whose key list lacks: what the handlers are to be told, found
// in the pass that replaces instead of from sets of every key.
func (s *compactStore) replaceForHandlers(list []any, resourceVersion string) (olds []any, gone []clientgocache.DeletedFinalStateUnknown, err error) {
	prior, left, err := s.replace(list, resourceVersion, true)
	if prior == nil && err != nil && !errors.Is(err, ErrIndexerFailed) {
		return nil, nil, err
	}
	olds = make([]any, len(prior))
	for i, r := range prior {
		if r != nil {
			olds[i] = r
		}
	}
	gone = make([]clientgocache.DeletedFinalStateUnknown, len(left))
	for i, r := range left {
		gone[i] = clientgocache.DeletedFinalStateUnknown{Key: r.key, Obj: r}
	}
	return olds, gone, err
}

// replace makes the store hold exactly list in place, under the lock, so
// that a relist does not build a second map and second indexes beside
// the ones it replaces: each record is marked with the Replace's number
// as it is put (a record the store already holds, reused by the relist,
// is only marked), and the records left unmarked are then taken out
// (gone, sorted by key). With wantPrior, prior[i] is the record the
// store held under list[i]'s key before (for a key listed twice, the
// same for both). Every record that leaves the store (replaced, gone, or
// an earlier listing of a key listed twice) is left to the read cache
// (leave). An error other than index functions' failures leaves the
// store as it was.
func (s *compactStore) replace(list []any, resourceVersion string, wantPrior bool) (prior, gone []*compactRecord, err error) {
	recs, errs, err := s.packAll(list)
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	m := s.nextReplace()
	prior, displaced := s.putAll(recs, m, wantPrior)
	gone = s.sweep(m)
	s.shrink()
	s.reached(resourceVersion)
	displaced = slices.DeleteFunc(displaced, func(r *compactRecord) bool { return s.items[r.key] == r })
	s.mu.Unlock()
	for _, r := range displaced {
		s.leave(r)
	}
	for _, r := range gone {
		s.leave(r)
	}
	slices.SortFunc(gone, func(a, b *compactRecord) int { return strings.Compare(a.key, b.key) })
	return prior, gone, errors.Join(errs...)
}

// putAll puts recs in order, each marked m, and returns (with wantPrior)
// what the store held under each one's key before this Replace, and the
// records the puts pushed out (some may be put back by a later listing of
// their key). s.mu is held.
func (s *compactStore) putAll(recs []*compactRecord, m uint32, wantPrior bool) (prior, displaced []*compactRecord) {
	if wantPrior {
		prior = make([]*compactRecord, len(recs))
	}
	// first is, once a key listed twice is met (with wantPrior), the index
	// of each key's first listing.
	var first map[string]int
	for i, r := range recs {
		old := s.items[r.key]
		if wantPrior {
			before := old
			if old != nil && old.marked(m) {
				// Listed before in this Replace: what was held before is
				// what the first listing found.
				first = firstListings(first, recs, i)
				before = prior[first[r.key]]
			} else if first != nil {
				first[r.key] = i
			}
			prior[i] = before
		}
		r.mark(m)
		if old != r {
			if old != nil {
				displaced = append(displaced, old)
			}
			s.put(r)
		}
	}
	return prior, displaced
}

// firstListings is first, or (when nil) the index of the first listing
// of each key among recs[:i], made once.
func firstListings(first map[string]int, recs []*compactRecord, i int) map[string]int {
	if first != nil {
		return first
	}
	first = make(map[string]int, i)
	for j, r := range recs[:i] {
		if _, seen := first[r.key]; !seen {
			first[r.key] = j
		}
	}
	return first
}

// sweep takes out the records not marked m, and returns them. s.mu is
// held.
func (s *compactStore) sweep(m uint32) (gone []*compactRecord) {
	for k, r := range s.items {
		if !r.marked(m) {
			s.remove(r)
			delete(s.items, k)
			gone = append(gone, r)
		}
	}
	return gone
}

// shrink makes the map and the indexes afresh when the store holds less
// than a quarter of the most it held since they were made: a Go map keeps
// its size when entries are deleted, and a Replace changes the store in
// place. It runs after a Replace and after each Delete that removed a
// record (the most held is then at most one more than it counts), so that
// the cost of making the maps again is spread over the deletes that
// called for it. s.mu is held.
func (s *compactStore) shrink() {
	s.widest = max(s.widest, len(s.items))
	if s.widest < shrinkFloor || 4*len(s.items) >= s.widest {
		return
	}
	items := make(map[string]*compactRecord, len(s.items))
	for k, r := range s.items {
		items[k] = r
	}
	s.items, s.widest = items, len(items)
	for _, name := range s.names {
		s.indices[name] = map[string]sets.Set[string]{}
	}
	for _, r := range s.items {
		s.indexRecord(r)
	}
}

// shrinkFloor is the fewest records a store must have held for shrink to
// make its maps afresh.
const shrinkFloor = 1024

// packAll packs every element of list (a record is taken as it is), and
// returns the index functions' failures apart: they do not stop a
// Replace.
func (s *compactStore) packAll(list []any) (recs []*compactRecord, idxErrs []error, err error) {
	recs = make([]*compactRecord, len(list))
	for i, obj := range list {
		r, err := s.pack(obj)
		if err != nil {
			return nil, nil, err
		}
		if err := r.indexErr(); err != nil {
			idxErrs = append(idxErrs, err)
		}
		recs[i] = r
	}
	return recs, idxErrs, nil
}

// nextReplace numbers a new Replace, for the records' marks (31 bits,
// never 0, the mark of a record no Replace has listed). s.mu is held.
func (s *compactStore) nextReplace() uint32 {
	s.replaces = (s.replaces + 1) & (1<<(32-stateMarkShift) - 1)
	if s.replaces == 0 {
		s.replaces = 1
	}
	return s.replaces
}
