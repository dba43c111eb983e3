package cache

import (
	"fmt"
	"unique"
	"unsafe"
)

// recordIndex is an object's values for each index of its store, in the
// order of the store's index names when they were computed. Most objects
// have exactly one value in every index (a namespace, a label, an owner),
// so that form is one slice of the values, the ith the ith index's: one
// allocation for the record to hold, where a slice per index would take
// one more per index, each of them more for the collector to mark. Any
// other form (an index with no value or several, or whose function
// failed) is a slice per index (many), which the record keeps apart.
type recordIndex struct {
	// one holds one value per index, unless many is set.
	one []string
	// many holds the values of each index, if some index has not exactly
	// one.
	many [][]string
}

// indexValues runs every index function on obj; one that fails leaves
// obj out of its index, and the error says so. Values are interned:
// they repeat across records, and nothing of the object or of the
// function's slice is kept.
func indexValues(key string, obj any, names []string, funcs []IndexFunc) (recordIndex, error) {
	var (
		ix       recordIndex
		first    error
		failures int
	)
	if len(funcs) == 0 {
		return ix, nil
	}
	ix.one = make([]string, 0, len(funcs))
	for i, f := range funcs {
		vs, err := f(obj)
		if err != nil {
			if failures++; first == nil {
				first = fmt.Errorf("%w: index %q failed on %s: %w", ErrIndexerFailed, names[i], key, err)
			}
			vs = nil
		}
		if ix.many == nil && len(vs) == 1 {
			ix.one = append(ix.one, unique.Make(vs[0]).Value())
			continue
		}
		if ix.many == nil {
			ix.many = ix.split(len(funcs))
		}
		ix.many = append(ix.many, interned(vs))
	}
	if failures > 1 {
		first = fmt.Errorf("%w (and %d more failures)", first, failures-1)
	}
	return ix, first
}

// split returns ix's values so far as a slice per index, with room for
// n indexes.
func (ix *recordIndex) split(n int) [][]string {
	many := make([][]string, len(ix.one), n)
	for i := range ix.one {
		many[i] = ix.one[i : i+1 : i+1]
	}
	ix.one = nil
	return many
}

// interned is a copy of vs with each value interned.
func interned(vs []string) []string {
	if len(vs) == 0 {
		return nil
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = unique.Make(v).Value()
	}
	return out
}

// setIndex sets the record's index values and failure.
func (r *compactRecord) setIndex(ix recordIndex, err error) {
	r.idx = values{}
	if ix.many == nil {
		r.idx = valuesOf(ix.one)
	}
	if err == nil && ix.many == nil && r.odd.Load() == nil {
		return
	}
	r.changeOdd(func(o *recordOdd) { o.idxErr, o.idx = err, ix.many })
}

// indexed is how many of its store's indexes r has values for.
func (r *compactRecord) indexed() int {
	if o := r.odd.Load(); o != nil && o.idx != nil {
		return len(o.idx)
	}
	return r.idx.n
}

// valuesAt returns r's values for index i, which must be below
// r.indexed(). The slice is r's: not to be changed.
func (r *compactRecord) valuesAt(i int) []string {
	if o := r.odd.Load(); o != nil && o.idx != nil {
		return o.idx[i]
	}
	return r.idx.slice()[i : i+1 : i+1]
}

// allValues returns r's values for each index, as a new slice per index
// (for AddIndexers, which appends to them).
func (r *compactRecord) allValues() [][]string {
	all := make([][]string, r.indexed())
	for i := range all {
		all[i] = r.valuesAt(i)
	}
	return all
}

// indexOf is vals, a slice of values per index, in the form a record
// holds it: one slice of the values when every index has exactly one.
func indexOf(vals [][]string) recordIndex {
	for _, vs := range vals {
		if len(vs) != 1 {
			return recordIndex{many: vals}
		}
	}
	ix := recordIndex{one: make([]string, len(vals))}
	for i, vs := range vals {
		ix.one[i] = vs[0]
	}
	return ix
}

// values is a slice of strings in two words (its capacity is its
// length): a record's one value per index, held so that the record fits
// its size class.
type values struct {
	p *string
	n int
}

// valuesOf returns vs as values (vs's memory, not a copy).
func valuesOf(vs []string) values {
	if len(vs) == 0 {
		return values{}
	}
	return values{p: unsafe.SliceData(vs), n: len(vs)}
}

// slice returns the values as a slice of v's memory.
func (v values) slice() []string { return unsafe.Slice(v.p, v.n) }
