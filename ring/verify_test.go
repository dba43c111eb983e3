package ring

import (
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/kreflector/cache/shard"
)

func newTestRing(t *testing.T) *Ring {
	t.Helper()
	r, err := New(Config{Client: fake.NewClientset().CoordinationV1(), Namespace: "ring", Name: "test", Identity: "me", Buckets: 16})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func setOf(n int, buckets ...int) set {
	s := newSet(n)
	for _, b := range buckets {
		s.add(b)
	}
	return s
}

// A claim opens only if the read that follows it shows no other live
// member holding the bucket; when two replicas claim one bucket at once,
// both see the other's claim and both give it up.
func TestVerifyOpensOnlyUncontestedClaims(t *testing.T) {
	r := newTestRing(t)
	st := r.newState()
	st.held, st.round = setOf(16, 1, 2, 3), 7
	r.gate.open(setOf(16, 1)) // 1 was verified earlier; 2 and 3 are claims
	other := member{name: "other", held: setOf(16, 3)}
	r.verify(st, view{buckets: 16, live: []member{{name: r.lease, held: st.held}, other}})
	if !r.gate.holds(2) {
		t.Error("an uncontested claim did not open")
	}
	if r.gate.holds(3) || st.held.has(3) {
		t.Error("a contested claim opened or stayed held")
	}
	if st.quiet <= st.round {
		t.Error("no pause before claiming again after a conflict")
	}
	if s := r.Status(); s.Conflicts != 1 || s.Acquired != 1 {
		t.Errorf("status after verify: %+v", s)
	}
}

func TestConfigRefusesWhatCannotWork(t *testing.T) {
	ok := Config{Client: fake.NewClientset().CoordinationV1(), Namespace: "ring", Name: "test", Identity: "me"}
	for name, change := range map[string]func(*Config){
		"no client":              func(c *Config) { c.Client = nil },
		"no namespace":           func(c *Config) { c.Namespace = "" },
		"bad name":               func(c *Config) { c.Name = "no spaces allowed" },
		"bad key":                func(c *Config) { c.Key = "object.metadata.name" },
		"renew ≥ lease":          func(c *Config) { c.RenewDeadline = 20 * time.Second },
		"retry ≥ renew":          func(c *Config) { c.RetryPeriod = 10 * time.Second },
		"fractional lease":       func(c *Config) { c.LeaseDuration = 15500 * time.Millisecond },
		"buckets not power of 2": func(c *Config) { c.Buckets = 100 },
		"too many buckets":       func(c *Config) { c.Buckets = 8192 },
	} {
		c := ok
		change(&c)
		if _, err := New(c); !errors.Is(err, ErrMisconfigured) {
			t.Errorf("%s: got %v, want an error wrapping ErrMisconfigured", name, err)
		}
	}
	r, err := New(ok)
	if err != nil {
		t.Fatal(err)
	}
	if r.cfg.LeaseDuration != 15*time.Second || r.cfg.RenewDeadline != 10*time.Second || r.cfg.RetryPeriod != 2*time.Second || r.cfg.Buckets != DefaultBuckets || r.cfg.Key != shard.ByUID {
		t.Errorf("defaults: %+v", r.cfg)
	}
}

// Bucket sets survive their Lease encoding, and a set's shard covers
// exactly its buckets, adjacent ones merged.
func TestBucketSetsEncodeAndBecomeShards(t *testing.T) {
	s := setOf(64, 0, 1, 2, 9, 63)
	got, err := decodeSet(s.encode(), 64)
	if err != nil || !got.equal(s) {
		t.Fatalf("decode(encode) = %v, %v", got.list(), err)
	}
	if _, err := decodeSet("zz", 64); err == nil {
		t.Error("decoded a malformed set")
	}
	sh, ok := shardOf(s, shard.ByUID)
	if !ok || len(sh.Requirements()) != 3 {
		t.Fatalf("shard of %v: %v (%v)", s.list(), sh, ok)
	}
	for b := range 64 {
		if in := sh.ContainsHash(uint64(b)<<58 + 12345); in != s.has(b) {
			t.Errorf("bucket %d: in shard %v, in set %v", b, in, s.has(b))
		}
		if bucketOf(uint64(b)<<58+12345, 64) != b {
			t.Errorf("bucketOf misplaces bucket %d", b)
		}
	}
	if _, ok := shardOf(newSet(64), shard.ByUID); ok {
		t.Error("the empty set made a shard")
	}
}
