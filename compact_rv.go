package cache

import "strconv"

// A record keeps its object's resourceVersion as a number where it is one
// in canonical form (kube-apiserver's are etcd's revisions, in decimal):
// 8 bytes in the record and nothing apart, where a string took 16 and an
// allocation of its own. Any other resourceVersion (the API calls them
// opaque) is kept as the string it was, in the record's rarely set
// fields. Only equality is asked of resourceVersions, and a number is
// written back exactly as it came, since only the canonical form (digits,
// no leading zero, not 0) is taken as one.

// packRV returns rv as a number, if it is one in canonical form.
func packRV(rv string) (uint64, bool) {
	if rv == "" || rv[0] == '0' || len(rv) > 20 {
		return 0, false
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	return n, err == nil
}

// setRV sets r's resourceVersion.
func (r *compactRecord) setRV(rv string) {
	if n, ok := packRV(rv); ok {
		r.rv = n
		return
	}
	r.rv = 0
	if rv == "" && r.odd.Load() == nil {
		return
	}
	r.changeOdd(func(o *recordOdd) { o.rv = rv })
}

// resourceVersion returns r's resourceVersion ("" if its object has none).
func (r *compactRecord) resourceVersion() string {
	if r.rv != 0 {
		return strconv.FormatUint(r.rv, 10)
	}
	return r.oddRV()
}

// sameVersion says whether r holds the object at resourceVersion rv
// (never for an empty one), without making r's a string.
func (r *compactRecord) sameVersion(rv string) bool {
	if rv == "" {
		return false
	}
	if r.rv != 0 {
		n, ok := packRV(rv)
		return ok && n == r.rv
	}
	return r.oddRV() == rv
}

// sameRecordVersion says whether a and b have one resourceVersion (both
// none too), as their strings would compare.
func sameRecordVersion(a, b *compactRecord) bool {
	return a.rv == b.rv && (a.rv != 0 || a.oddRV() == b.oddRV())
}

// oddRV is r's resourceVersion kept as a string ("" if none is).
func (r *compactRecord) oddRV() string {
	o := r.odd.Load()
	if o == nil {
		return ""
	}
	return o.rv
}
