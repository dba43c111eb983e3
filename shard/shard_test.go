package shard

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
)

func TestReplicaShardSelectorForm(t *testing.T) {
	cases := []struct {
		i, n int
		want string
	}{
		{0, 1, "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')"},
		{0, 2, "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"},
		{1, 2, "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"},
		{2, 4, "shardRange(object.metadata.uid, '0x8000000000000000', '0xc000000000000000')"},
		{1, 3, "shardRange(object.metadata.uid, '0x5555555555555555', '0xaaaaaaaaaaaaaaaa')"},
	}
	for _, c := range cases {
		s, err := Replica(c.i, c.n)
		if err != nil {
			t.Fatalf("Replica(%d, %d): %v", c.i, c.n, err)
		}
		if got := s.String(); got != c.want {
			t.Errorf("Replica(%d, %d) = %s, want %s", c.i, c.n, got, c.want)
		}
		back, err := Parse(s.String())
		if err != nil || !back.Equal(s) {
			t.Errorf("Parse(%q) = %v, %v; want it back", s, back, err)
		}
	}
	ns, _ := ReplicaBy(ByNamespace, 0, 2)
	if want := "shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')"; ns.String() != want {
		t.Errorf("by namespace: %s, want %s", ns, want)
	}
}

// The n replicas' shards cover the hash space exactly once: they are
// contiguous, start at 0 and end at 2^64, for any n.
func TestReplicaShardsPartitionTheSpace(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 7, 10, 64, 1000} {
		next := uint64(0)
		var total float64
		for i := range n {
			s, err := Replica(i, n)
			if err != nil {
				t.Fatal(err)
			}
			r := s.ranges
			if len(r) != 1 || r[0].first != next {
				t.Fatalf("n=%d i=%d: ranges %v, want one starting at %#x", n, i, r, next)
			}
			next = r[0].last + 1 // wraps to 0 after the last replica
			total += s.Fraction()
		}
		if next != 0 {
			t.Errorf("n=%d: the last shard ends before 2^64 (next %#x)", n, next)
		}
		if total < 0.999999 || total > 1.000001 {
			t.Errorf("n=%d: fractions add up to %v", n, total)
		}
	}
}

func TestShardBadInput(t *testing.T) {
	bad := map[string]func() error{
		"no replicas":       func() error { _, err := Replica(0, 0); return err },
		"negative replicas": func() error { _, err := Replica(0, -2); return err },
		"i out of range":    func() error { _, err := Replica(3, 3); return err },
		"negative i":        func() error { _, err := Replica(-1, 3); return err },
		"unsupported key":   func() error { _, err := ReplicaBy("object.metadata.name", 0, 2); return err },
		"no ranges":         func() error { _, err := New(); return err },
		"empty range":       func() error { return newRange("0x1000000000000000", "0x1000000000000000") },
		"inverted range":    func() error { return newRange("0x2000000000000000", "0x1000000000000000") },
		"short bound":       func() error { return newRange("0x0", "0x8000000000000000") },
		"upper-case hex":    func() error { return newRange("0x000000000000000A", "0x8000000000000000") },
		"start at 2^64":     func() error { return newRange(hashSpaceEnd, hashSpaceEnd) },
		"empty selector":    func() error { _, err := Parse("  "); return err },
		"other function": func() error {
			_, err := Parse("hashRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')")
			return err
		},
		"and, not or":      func() error { _, err := Parse(uidRange(0, 2) + " && " + uidRange(1, 2)); return err },
		"trailing garbage": func() error { _, err := Parse(uidRange(0, 2) + " x"); return err },
		"unterminated":     func() error { _, err := Parse("shardRange(object.metadata.uid, '0x0000000000000000"); return err },
		"two arguments": func() error {
			_, err := Parse("shardRange(object.metadata.uid, '0x0000000000000000')")
			return err
		},
		"unquoted bound": func() error {
			_, err := Parse("shardRange(object.metadata.uid, 0x0000000000000000, '0x10000000000000000')")
			return err
		},
		"mixed keys (parse)": func() error { _, err := Parse(uidRange(0, 2) + " || " + nsRange(1, 2)); return err },
		"mixed keys (union)": func() error { _, err := mustShard(t, 0, 2).Union(mustShardBy(t, ByNamespace, 1, 2)); return err },
		"union with zero":    func() error { _, err := mustShard(t, 0, 2).Union(Shard{}); return err },
	}
	for name, f := range bad {
		err := f()
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: error %v, want one wrapping ErrInvalid", name, err)
		}
	}
}

func newRange(start, end string) error {
	_, err := New(sharding.ShardRangeRequirement{Key: string(ByUID), Start: start, End: end})
	return err
}

func uidRange(i, n int) string { s, _ := Replica(i, n); return s.String() }
func nsRange(i, n int) string {
	s, _ := ReplicaBy(ByNamespace, i, n)
	return s.String()
}

func mustShard(t testing.TB, i, n int) Shard { return mustShardBy(t, ByUID, i, n) }

func mustShardBy(t testing.TB, key Key, i, n int) Shard {
	t.Helper()
	s, err := ReplicaBy(key, i, n)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseShardForms(t *testing.T) {
	in := ` shardRange( object.metadata.uid ,"0xc000000000000000",'0x10000000000000000' )||shardRange(object.metadata.uid, '0x0000000000000000', '0x4000000000000000')`
	s, err := Parse(in)
	if err != nil {
		t.Fatal(err)
	}
	want := "shardRange(object.metadata.uid, '0x0000000000000000', '0x4000000000000000') || shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')"
	if s.String() != want {
		t.Errorf("got %s, want %s", s, want)
	}
	if f := s.Fraction(); f != 0.5 {
		t.Errorf("fraction %v, want 0.5", f)
	}
}

func TestShardUnionMerges(t *testing.T) {
	// Replica 1 of 3 and replica 1 of 4 overlap: their union is one range.
	u, err := mustShard(t, 1, 3).Union(mustShard(t, 1, 4))
	if err != nil {
		t.Fatal(err)
	}
	want := "shardRange(object.metadata.uid, '0x4000000000000000', '0xaaaaaaaaaaaaaaaa')"
	if u.String() != want {
		t.Errorf("union %s, want %s", u, want)
	}
	// Adjacent ranges merge too, up to the whole space.
	all := mustShard(t, 0, 2)
	all, _ = all.Union(mustShard(t, 1, 2))
	if !all.Equal(mustShard(t, 0, 1)) {
		t.Errorf("0/2 ∪ 1/2 = %s, want the whole space", all)
	}
}

// Our matching agrees with apimachinery's selector on random UIDs and
// namespaces, for shards of several shapes.
func TestShardMatchesApimachinery(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	shards := []Shard{mustShard(t, 0, 2), mustShard(t, 1, 3), mustShard(t, 2, 7), mustShardBy(t, ByNamespace, 1, 4)}
	odd, _ := mustShard(t, 0, 4).Union(mustShard(t, 2, 4))
	shards = append(shards, odd)
	for _, s := range shards {
		theirs := s.Selector()
		for i := range 2000 {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
				UID:       types.UID(fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", rng.Uint32(), rng.Uint32()&0xffff, i, rng.Uint32()&0xfff, rng.Uint64()&0xffffffffffff)),
				Namespace: fmt.Sprintf("ns-%d", rng.IntN(500)),
			}}
			want, err := theirs.Matches(pod)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Contains(pod)
			if err != nil || got != want {
				t.Fatalf("%s: %s/%s: Contains %v (%v), apimachinery %v", s, pod.Namespace, pod.UID, got, err, want)
			}
		}
	}
}

func TestShardContainsNeedsMetadata(t *testing.T) {
	_, err := mustShard(t, 0, 2).Contains(&metav1.Status{})
	if err == nil || !strings.Contains(err.Error(), "Status") {
		t.Errorf("Contains(Status) = %v, want an error naming the type", err)
	}
}

// Key.Hash is the standard library's FNV-1a over the key's value: the UID,
// or the namespace (empty for a cluster-scoped object).
func TestKeyHashIsFNV1a(t *testing.T) {
	objs := []metav1.ObjectMeta{
		{UID: "0b9b2c1e-5a55-4c7e-9a0f-6f1f3f0b7c2d", Namespace: "kube-system"},
		{UID: "x", Namespace: ""},
		{UID: "", Namespace: "ns-1"},
	}
	for _, m := range objs {
		for key, v := range map[Key]string{ByUID: string(m.UID), ByNamespace: m.Namespace} {
			h := fnv.New64a()
			h.Write([]byte(v))
			if got, want := key.Hash(&m), h.Sum64(); got != want {
				t.Errorf("%s of %q: Hash %#x, hash/fnv %#x", key, v, got, want)
			}
		}
	}
}

// Minus leaves what the other shard does not own: hash by hash, s minus o
// contains h exactly when s does and o does not.
func TestShardMinusIsSetDifference(t *testing.T) {
	whole := mustShard(t, 0, 1)
	if d, err := whole.Minus(whole); err != nil || !d.IsZero() {
		t.Fatalf("whole − whole = %v, %v; want the zero Shard", d, err)
	}
	if d, err := whole.Minus(Shard{}); err != nil || !d.Equal(whole) {
		t.Fatalf("whole − zero = %v, %v; want whole", d, err)
	}
	cases := [][2]Shard{
		{mustShard(t, 1, 3), mustShard(t, 1, 4)},
		{mustShard(t, 1, 4), mustShard(t, 1, 3)},
		{whole, mustShard(t, 2, 5)},
		{mustShard(t, 4, 5), whole},
	}
	u, _ := mustShard(t, 0, 7).Union(mustShard(t, 3, 7))
	cases = append(cases, [2]Shard{whole, u}, [2]Shard{u, mustShard(t, 3, 7)})
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range cases {
		d, err := c[0].Minus(c[1])
		if err != nil {
			t.Fatal(err)
		}
		probes := []uint64{0, ^uint64(0)}
		for _, r := range append(c[0].ranges, c[1].ranges...) {
			probes = append(probes, r.first, r.last, r.first-1, r.last+1)
		}
		for range 1000 {
			probes = append(probes, rng.Uint64())
		}
		for _, h := range probes {
			want := c[0].ContainsHash(h) && !c[1].ContainsHash(h)
			if d.ContainsHash(h) != want {
				t.Fatalf("%s − %s: hash %#x in result %v, want %v", c[0], c[1], h, !want, want)
			}
		}
	}
	byNS, _ := ReplicaBy(ByNamespace, 0, 2)
	if _, err := whole.Minus(byNS); !errors.Is(err, ErrInvalid) {
		t.Fatalf("mixed keys: %v, want ErrInvalid", err)
	}
}
