package cache

import (
	"errors"
	"slices"
	"strings"

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
// same for both). An error other than index functions' failures
// leaves the store as it was.
func (s *compactStore) replace(list []any, resourceVersion string, wantPrior bool) (prior, gone []*compactRecord, err error) {
	recs, errs, err := s.packAll(list)
	if err != nil {
		return nil, nil, err
	}
	if wantPrior {
		prior = make([]*compactRecord, len(recs))
	}
	var replaced []*compactRecord
	s.mu.Lock()
	m := s.nextReplace()
	for i, r := range recs {
		old := s.items[r.key]
		if old != nil && old.marked(m) {
			// A key listed twice: what was held before is what the
			// first listing found.
			old = nil
			if wantPrior {
				old = prior[slices.IndexFunc(recs[:i], func(e *compactRecord) bool { return e.key == r.key })]
			}
		} else if old != nil && old != r {
			replaced = append(replaced, old)
		}
		if wantPrior {
			prior[i] = old
		}
		r.mark(m)
		if s.items[r.key] != r {
			s.put(r)
		}
	}
	for k, r := range s.items {
		if !r.marked(m) {
			s.remove(r)
			delete(s.items, k)
			gone = append(gone, r)
		}
	}
	s.rv = resourceVersion
	s.mu.Unlock()
	for _, r := range replaced {
		s.leave(r)
	}
	for _, r := range gone {
		s.leave(r)
	}
	slices.SortFunc(gone, func(a, b *compactRecord) int { return strings.Compare(a.key, b.key) })
	return prior, gone, errors.Join(errs...)
}

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
