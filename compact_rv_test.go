package cache

import (
	"testing"

	"github.com/kreflector/cache/internal/podgen"
)

// A record's resourceVersion comes back exactly as the object had it,
// number or not, and compares as the strings would.
func TestCompactRecordResourceVersion(t *testing.T) {
	rvs := []string{"", "1", "42", "18446744073709551615", "18446744073709551616", "0", "007", "+7", "7a", "opaque/rv"}
	recs := make([]*compactRecord, len(rvs))
	for i, rv := range rvs {
		r := &compactRecord{}
		r.setRV(rv)
		if got := r.resourceVersion(); got != rv {
			t.Errorf("%q came back as %q", rv, got)
		}
		if _, number := packRV(rv); number != (r.odd.Load() == nil && rv != "") {
			t.Errorf("%q: kept as a number %v, apart %v", rv, number, r.odd.Load() != nil)
		}
		recs[i] = r
	}
	for i, a := range recs {
		for j, b := range recs {
			if got, want := sameRecordVersion(a, b), rvs[i] == rvs[j]; got != want {
				t.Errorf("sameRecordVersion(%q, %q) = %v", rvs[i], rvs[j], got)
			}
			if got, want := a.sameVersion(rvs[j]), rvs[j] != "" && rvs[i] == rvs[j]; got != want {
				t.Errorf("%q.sameVersion(%q) = %v", rvs[i], rvs[j], got)
			}
		}
	}
}

// A compact store says the resourceVersion it reached as the objects had
// it, number or not.
func TestCompactStoreKeepsOpaqueResourceVersions(t *testing.T) {
	s := newCompactStore(MetaNamespaceKeyFunc, nil, CompactOptions{})
	for i, rv := range []string{"12", "00012", "x-12"} {
		p := podgen.Pod(i, 1)
		p.ResourceVersion = rv
		if err := s.Add(p); err != nil {
			t.Fatal(err)
		}
		if got := s.LastStoreSyncResourceVersion(); got != rv {
			t.Fatalf("after %q the store says %q", rv, got)
		}
		r, _ := s.record(podKey(p))
		if !r.sameVersion(rv) {
			t.Fatalf("the record of %q is not at it", rv)
		}
	}
}
