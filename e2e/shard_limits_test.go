//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/shard"
)

// ringWorstRanges is the most ranges a ring member's selector may hold
// (ring/limits.go's maxRanges): a 1,024-bucket ring keeps each member
// under it.
const ringWorstRanges = 64

// spreadShard returns k disjoint ranges over metadata.uid, each one
// 1,024th of the hash space, spread evenly (k ≤ 512): a ring member's
// selector at its most fragmented.
func spreadShard(t *testing.T, k int) cache.Shard {
	t.Helper()
	reqs := make([]sharding.ShardRangeRequirement, k)
	const bucket = uint64(1) << 54 // 2^64 / 1024
	for i := range reqs {
		start := uint64(i) * (1024 / uint64(k)) * bucket
		reqs[i] = sharding.ShardRangeRequirement{Key: string(shard.ByUID), Start: fmt.Sprintf("0x%016x", start), End: fmt.Sprintf("0x%016x", start+bucket)}
	}
	s, err := shard.New(reqs...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// manyRanges is a selector of k disjoint ranges over metadata.uid,
// joined by " || " with pad more spaces before each "||".
func manyRanges(k, pad int) string {
	step := ^uint64(0)/uint64(k) + 1
	terms := make([]string, k)
	for i := range terms {
		start := uint64(i) * step
		terms[i] = fmt.Sprintf("shardRange(object.metadata.uid, '0x%016x', '0x%016x')", start, start+step/2)
	}
	return strings.Join(terms, strings.Repeat(" ", pad)+" || ")
}

// sizedSelector is manyRanges(k, 0) with spaces after its first term
// to make it size bytes long (if it is not longer already).
func sizedSelector(k, size int) string {
	sel := manyRanges(k, 0)
	first, rest, _ := strings.Cut(sel, " || ")
	return first + strings.Repeat(" ", max(size-len(sel), 0)) + " || " + rest
}

// listWith LISTs one ConfigMap of ns with selector sel on a new client
// of cfg (a refused request may end its connection), and returns the
// error.
func listWith(t *testing.T, cfg *rest.Config, ns, sel string) error {
	t.Helper()
	cs, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{ShardSelector: sel, Limit: 1})
	if err == nil && (l.ShardInfo == nil || l.ShardInfo.Selector == "") {
		return fmt.Errorf("accepted without echoing the selector")
	}
	return err
}

// statusOf is err with its HTTP status code, if it has one, or
// "accepted".
func statusOf(err error) string {
	if err == nil {
		return "accepted"
	}
	var s apierrors.APIStatus
	if errors.As(err, &s) {
		return fmt.Sprintf("%d %q: %v", s.Status().Code, s.Status().Reason, err)
	}
	return fmt.Sprint(err)
}

// largest finds by doubling and bisection the largest k ≥ 1 for which
// ok(k) holds (ok(1) must), up to limit, and the error just beyond it.
func largest(limit int, ok func(int) error) (int, error) {
	lo, hi := 1, 2
	var beyond error
	for hi <= limit {
		if err := ok(hi); err != nil {
			beyond = err
			break
		}
		lo, hi = hi, hi*2
	}
	if hi > limit {
		return lo, nil
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if err := ok(mid); err != nil {
			hi, beyond = mid, err
		} else {
			lo = mid
		}
	}
	return lo, beyond
}

// TestShardSelectorLimits measures what the gated kube-apiserver accepts
// as a LIST's shard selector, from client-go (HTTP/2) and over HTTP/1.1:
// the most shardRange terms joined by " || ", and, with spaces padding
// the terms, the longest selector; it logs the error past each. It
// asserts that the ring's worst case, 64 ranges, is accepted and echoed.
func TestShardSelectorLimits(t *testing.T) {
	t.Parallel()
	cs := client(t, testCluster.admin)
	ns := namespace(t, cs)
	mustCreateConfigMaps(t, cs, ns, 1)

	worst := spreadShard(t, ringWorstRanges)
	l, err := cs.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{ShardSelector: worst.String()})
	if err != nil {
		t.Fatalf("a selector of %d ranges (%d bytes), the ring's worst case, was refused: %v", ringWorstRanges, len(worst.String()), err)
	}
	if l.ShardInfo == nil || l.ShardInfo.Selector != worst.String() {
		t.Fatalf("a selector of %d ranges came back as %+v", ringWorstRanges, l.ShardInfo)
	}
	t.Logf("the ring's worst case, %d ranges (%d bytes), is accepted and echoed", ringWorstRanges, len(worst.String()))

	http1 := rest.CopyConfig(testCluster.admin)
	http1.TLSClientConfig.NextProtos = []string{"http/1.1"}
	for _, c := range []struct {
		name string
		cfg  *rest.Config
	}{{"HTTP/2 (client-go's default)", testCluster.admin}, {"HTTP/1.1", http1}} {
		terms, beyond := largest(1<<16, func(k int) error { return listWith(t, c.cfg, ns, manyRanges(k, 0)) })
		t.Logf("%s: at most %d terms (%d bytes); %d: %s", c.name, terms, len(manyRanges(terms, 0)), terms+1, statusOf(beyond))
		// Padding a tenth as many terms shows whether bytes or terms
		// are the limit.
		few := max(terms/10, 1)
		pad, padBeyond := largest(1<<20, func(p int) error { return listWith(t, c.cfg, ns, manyRanges(few, p)) })
		t.Logf("%s: %d terms padded: at most %d bytes; one more space each: %s", c.name, few, len(manyRanges(few, pad)), statusOf(padBeyond))
		// The exact bound: terms whole, then spaces after the first.
		for _, size := range []int{100000, 100001} {
			sel := sizedSelector(terms, size)
			t.Logf("%s: a selector of %d bytes: %s", c.name, len(sel), statusOf(listWith(t, c.cfg, ns, sel)))
		}
		if terms < ringWorstRanges {
			t.Errorf("%s: only %d terms accepted, the ring may need %d", c.name, terms, ringWorstRanges)
		}
	}
}
