//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kreflector/cache"
)

// TestShardedInformersUnderChurn runs two groups of our sharded informers
// over one namespace of Secrets through one churn of creates, updates and
// deletes (at least 20 a second for 60 s; over 2,000 objects):
//
//   - group A, 4 replicas of 4 shards, whose watches are all held while
//     etcd is compacted past them, so that each resumes into 410 Expired
//     and relists mid-churn. At the end their stores are pairwise
//     disjoint, their union is the server's consistent LIST, each holds
//     its server-side shard (25 % ± 5 % of the objects), and each object
//     was heard of by one replica's handler only, its owner's.
//   - group B, 3 replicas resharded to 4 mid-churn by the handoff
//     protocol (each old replica gets old ∪ new, a fourth starts on its
//     new shard, WaitForShard on each, then each old one gets its new
//     shard and WaitForShard): each of 400 objects the churn never
//     touches is in some replica's store at every sample taken every
//     20 ms through the reshard and after; every WaitForShard returns with
//     its shard's untouched objects in the indexer, after a complete LIST
//     echoing the shard; at the end each store holds its new shard and
//     their union covers the server.
//
// It does not call t.Parallel: compacting etcd would expire the held
// watches of other tests too.
func TestShardedInformersUnderChurn(t *testing.T) {
	cs := client(t, testCluster.admin)
	fx := newChurnFixture(t, cs)
	groupA, groupB := fx.startGroups(t)
	ch := startChurn(t.Context(), cs, fx.ns, churnWorkers, churnPerWorker, churnRate, churnFor, 19)
	t.Cleanup(func() { <-ch.done })

	expireWatches(t, ch, groupA)
	ch.waitOps(t, 500)
	sampler := startOwnerSampler(fx.residentKeys, groupB, 20*time.Millisecond)
	groupB = fx.handOver(t, ch, groupB, sampler)
	checkChurnVolume(t, ch, len(fx.names))
	quiesce(t, cs, fx.ns, fx.four, groupA, groupB)
	samples, orphans := sampler.finish()

	server := shardedSecretList(t, cs, fx.ns, cache.Shard{})
	serverKeys := keysOf(t, server)
	t.Logf("quiesced: the server holds %d Secrets", len(server))
	wantShard := make([][]interface{}, 4)
	for i := range 4 {
		wantShard[i] = shardedSecretList(t, cs, fx.ns, fx.four[i])
	}
	t.Run("A", func(t *testing.T) {
		checkPartition(t, groupA, fx.four, wantShard, serverKeys)
		checkExpiredAndBalanced(t, groupA, len(server))
		checkHeardByOwner(t, groupA, fx.four, serverKeys)
	})
	t.Run("B", func(t *testing.T) {
		checkPartition(t, groupB, fx.four, wantShard, serverKeys)
		for _, r := range groupB[:3] {
			// Every change of shard is synced: merged, or relisted for a
			// reason that is counted.
			st := r.health(t).Stats().Reflector
			if st.ReshardsMerged+st.Lists[cache.ListReshard] < r.reshards {
				t.Errorf("%s: %d reshards merged and %d relisted after %d changes of shard (fallbacks %v)", r.name, st.ReshardsMerged, st.Lists[cache.ListReshard], r.reshards, st.ReshardFallbacks)
			}
			t.Logf("%s: %d changes of shard, %d merged, %d relisted (fallbacks %v)", r.name, r.reshards, st.ReshardsMerged, st.Lists[cache.ListReshard], st.ReshardFallbacks)
		}
		t.Logf("%d samples of the %d untouched objects' owners from the reshard's start to quiescence", samples, churnResidents)
		if samples < 10 {
			t.Errorf("only %d samples taken", samples)
		}
		if len(orphans) > 0 {
			t.Errorf("objects without an owner:\n  %s", strings.Join(orphans, "\n  "))
		}
	})
}

// The churn of TestShardedInformersUnderChurn.
const (
	churnWorkers, churnPerWorker = 4, 400 // 1,600 objects for the churn to start with
	churnResidents               = 400    // and 400 it never touches
	churnRate                    = 25.0   // calls a second
	churnFor                     = 62 * time.Second
)

// churnFixture is TestShardedInformersUnderChurn's namespace, the objects
// created in it before the churn, and the shards of 3 and 4 replicas.
type churnFixture struct {
	cs    *kubernetes.Clientset
	ns    string
	start time.Time
	// names are all the objects created; residentKeys the keys of those
	// the churn never touches, and stable their UIDs.
	names        []string
	residentKeys []string
	stable       map[string]types.UID
	three, four  []cache.Shard
}

func newChurnFixture(t *testing.T, cs *kubernetes.Clientset) *churnFixture {
	fx := &churnFixture{cs: cs, ns: namespace(t, cs), start: time.Now()}
	for w := range churnWorkers {
		fx.names = append(fx.names, churnNames(w, churnPerWorker)...)
	}
	for i := range churnResidents {
		name := "resident-" + strconv.Itoa(i)
		fx.names = append(fx.names, name)
		fx.residentKeys = append(fx.residentKeys, fx.ns+"/"+name)
	}
	if err := createSecrets(t.Context(), cs, fx.ns, fx.names); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d Secrets created in %v", len(fx.names), time.Since(fx.start).Round(time.Millisecond))
	fx.stable = stableObjects(t, cs, fx.ns, "resident-")
	for i := range 3 {
		fx.three = append(fx.three, mustReplicaShard(t, i, 3))
	}
	for i := range 4 {
		fx.four = append(fx.four, mustReplicaShard(t, i, 4))
	}
	return fx
}

// startGroups starts group A (4 replicas of 4 shards) and group B (3 of
// 3) and waits until all 7 have synced.
func (fx *churnFixture) startGroups(t *testing.T) (groupA, groupB []*replica) {
	for i := range 4 {
		groupA = append(groupA, startReplica(t, fx.cs, fx.ns, fmt.Sprintf("A%d-of-4", i), fx.four[i]))
	}
	for i := range 3 {
		groupB = append(groupB, startReplica(t, fx.cs, fx.ns, fmt.Sprintf("B%d-of-3", i), fx.three[i]))
	}
	for _, r := range slices.Concat(groupA, groupB) {
		ctx, cancel := context.WithTimeout(t.Context(), minute)
		err := r.health(t).WaitForSync(ctx)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
	}
	t.Logf("7 informers synced %v after the start", time.Since(fx.start).Round(time.Millisecond))
	return groupA, groupB
}

// expireWatches holds every watch of group, lets the churn go on for 50
// calls, compacts etcd past them all and releases them: each resumes into
// 410 Expired and relists.
func expireWatches(t *testing.T, ch *churn, group []*replica) {
	ch.waitOps(t, 100)
	var releases []func()
	for _, r := range group {
		waiting, release := r.gate.interrupt()
		releases = append(releases, release)
		t.Cleanup(release)
		ctx, cancel := context.WithTimeout(t.Context(), minute)
		select {
		case <-waiting:
		case <-ctx.Done():
			t.Fatalf("%s did not watch again after its watch was stopped", r.name)
		}
		cancel()
	}
	ch.waitOps(t, ch.ops.Load()+50)
	rev := testCluster.compactEtcd(t)
	for _, release := range releases {
		release()
	}
	t.Logf("group A's watches held from call %d; etcd compacted at revision %d", ch.ops.Load()-50, rev)
}

// handOver reshards group B from 3 to 4 replicas by the handoff protocol
// while the churn goes on, adding the fourth replica to sampler, and
// returns the 4.
func (fx *churnFixture) handOver(t *testing.T, ch *churn, groupB []*replica, sampler *ownerSampler) []*replica {
	start := time.Now()
	unions := make([]cache.Shard, 3)
	for i, r := range groupB {
		u, err := fx.three[i].Union(fx.four[i])
		if err != nil {
			t.Fatal(err)
		}
		unions[i] = u
		r.setShard(t, u, fx.stable)
	}
	b3 := startReplica(t, fx.cs, fx.ns, "B3-of-4", fx.four[3])
	b3.waitForShard(t, fx.four[3], fx.stable)
	b3.syncedTo(t, fx.four[3], 0, 0)
	sampler.add(b3)
	groupB = append(groupB, b3)
	for i, r := range groupB[:3] {
		r.setShard(t, fx.four[i], fx.stable)
	}
	t.Logf("group B resharded 3 → 4 in %v, during churn calls up to %d; unions %v", time.Since(start).Round(time.Millisecond), ch.ops.Load(), unions)
	return groupB
}

// checkChurnVolume waits for the churn to end and checks that it was the
// one promised: at least 20 calls a second for at least 60 s, and, with
// the created objects, at least 2,000 objects.
func checkChurnVolume(t *testing.T, ch *churn, created int) {
	elapsed := ch.wait(t)
	ops, creates := ch.ops.Load(), ch.creates.Load()
	t.Logf("churn: %d calls in %v (%.1f/s), %d creates", ops, elapsed.Round(time.Millisecond), float64(ops)/elapsed.Seconds(), creates)
	if elapsed < 60*time.Second || float64(ops)/elapsed.Seconds() < 20 {
		t.Errorf("churn of %d calls in %v: want at least 20 a second for at least 60 s", ops, elapsed)
	}
	if objects := uint64(created) + creates; objects < 2000 {
		t.Errorf("%d objects in the test, want at least 2,000", objects)
	}
}

// quiesce waits until replica i of each group has been told of the newest
// marker in shard i (see shardMarkers).
func quiesce(t *testing.T, cs kubernetes.Interface, ns string, shards []cache.Shard, groupA, groupB []*replica) {
	markers := shardMarkers(t, cs, ns, shards)
	for i := range shards {
		for _, r := range []*replica{groupA[i], groupB[i]} {
			ctx, cancel := context.WithTimeout(t.Context(), minute)
			err := r.log.waitFor(ctx, markers[i].key, markers[i].rv)
			cancel()
			if err != nil {
				t.Fatalf("%s: %v (health %+v)", r.name, err, r.health(t).Health())
			}
		}
	}
}

// checkExpiredAndBalanced checks that each replica of group relisted after
// a 410 and holds 25 % ± 5 % of the server's objects.
func checkExpiredAndBalanced(t *testing.T, group []*replica, onServer int) {
	for i, r := range group {
		n := len(r.inf.GetStore().ListKeys())
		if f := float64(n) / float64(onServer); f < 0.20 || f > 0.30 {
			t.Errorf("%s holds %d of %d objects (%.1f %%), want 25 %% ± 5 %%", r.name, n, onServer, 100*f)
		}
		st := r.health(t).Stats().Reflector
		if st.WatchEnds[cache.WatchExpired] < 1 || st.Lists[cache.ListExpired] < 1 {
			t.Errorf("%s: no 410 relist after the compaction: watch ends %v, lists %v", r.name, st.WatchEnds, st.Lists)
		}
		t.Logf("%s (shard %d): %d objects; lists %v; watch ends %v", r.name, i, n, st.Lists, st.WatchEnds)
	}
}

// checkHeardByOwner checks that each object ever heard of by a handler of
// group was heard of by exactly one, its owner's (the replica whose shard
// holds its UID), and that each object on the server was heard of.
func checkHeardByOwner(t *testing.T, group []*replica, shards []cache.Shard, serverKeys map[string]types.UID) {
	heardBy := map[types.UID][]int{}
	for i, r := range group {
		uids, _ := r.log.snapshot()
		for u := range uids {
			heardBy[u] = append(heardBy[u], i)
		}
	}
	var wrong []string
	for u, rs := range heardBy {
		if len(rs) != 1 || !owns(shards[rs[0]], u) {
			wrong = append(wrong, fmt.Sprintf("uid %s (hash %#016x) heard of by replicas %v", u, uidHash(u), rs))
		}
	}
	for key, u := range serverKeys {
		if _, ok := heardBy[u]; !ok {
			wrong = append(wrong, fmt.Sprintf("%s (uid %s) on the server, heard of by no handler", key, u))
		}
	}
	if len(wrong) > 0 {
		slices.Sort(wrong)
		t.Errorf("%d objects not heard of by exactly their owner's handler; the first:\n  %s", len(wrong), strings.Join(wrong[:min(len(wrong), maxDiffs)], "\n  "))
	}
	t.Logf("%d objects heard of, each by one handler", len(heardBy))
}

// checkPartition checks a group of replicas at quiescence: replica i's
// store holds exactly the server's shard i (wantShard[i], a sharded LIST),
// the stores are pairwise disjoint and together hold every object the
// server holds (serverKeys), and each handler's view (the objects it was
// told exist, at their resourceVersions) is its store.
func checkPartition(t *testing.T, group []*replica, shards []cache.Shard, wantShard [][]interface{}, serverKeys map[string]types.UID) {
	t.Helper()
	holders := map[string][]int{}
	for i, r := range group {
		store := r.inf.GetStore().List()
		assertSame(t, fmt.Sprintf("the server's shard %s", shards[i]), wantShard[i], r.name+"'s store", store)
		for _, o := range store {
			m, _ := meta.Accessor(o)
			key := m.GetNamespace() + "/" + m.GetName()
			holders[key] = append(holders[key], i)
		}
		_, present := r.log.snapshot()
		if d := diffRVs(present, store); len(d) > 0 {
			t.Errorf("%s: its handler's view differs from its store in %d objects; the first:\n  %s", r.name, len(d), strings.Join(d[:min(len(d), maxDiffs)], "\n  "))
		}
	}
	var bad []string
	for key, rs := range holders {
		if len(rs) > 1 {
			bad = append(bad, fmt.Sprintf("%s in the stores of replicas %v", key, rs))
		}
		if _, ok := serverKeys[key]; !ok {
			bad = append(bad, fmt.Sprintf("%s held by %v, not on the server", key, rs))
		}
	}
	for key := range serverKeys {
		if _, ok := holders[key]; !ok {
			bad = append(bad, key+" on the server, in no store")
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		t.Errorf("the stores are not a partition of the server's objects (%d problems); the first:\n  %s", len(bad), strings.Join(bad[:min(len(bad), maxDiffs)], "\n  "))
	}
}

// diffRVs lists how a handler's view (key → resourceVersion) differs from
// a store's objects.
func diffRVs(view map[string]uint64, store []interface{}) []string {
	inStore := make(map[string]uint64, len(store))
	for _, o := range store {
		m, _ := meta.Accessor(o)
		rv, _ := strconv.ParseUint(m.GetResourceVersion(), 10, 64)
		inStore[m.GetNamespace()+"/"+m.GetName()] = rv
	}
	var out []string
	for k, rv := range inStore {
		if v, ok := view[k]; !ok || v != rv {
			out = append(out, fmt.Sprintf("%s: store rv %d, handler told rv %d (known %v)", k, rv, v, ok))
		}
	}
	for k, v := range view {
		if _, ok := inStore[k]; !ok {
			out = append(out, fmt.Sprintf("%s: handler told rv %d, not in the store", k, v))
		}
	}
	slices.Sort(out)
	return out
}

// TestReshardWithoutUnionLeavesAGap is the control for the owner
// sampling of TestShardedInformersUnderChurn: 3 replicas of ours go to 4
// shards without the union step, and a sample taken once replica 0 has
// shrunk to its new shard, before replica 1 has grown to its own, finds
// exactly the objects of the range between them ([1/4, 1/3) of the hash
// space) in no store. After every replica has its new shard, none is
// missing again.
func TestReshardWithoutUnionLeavesAGap(t *testing.T) {
	t.Parallel()
	cs := client(t, testCluster.admin)
	ns := namespace(t, cs)
	const objects = 400
	names := make([]string, objects)
	keys := make([]string, objects)
	for i := range names {
		names[i] = "resident-" + strconv.Itoa(i)
		keys[i] = ns + "/" + names[i]
	}
	if err := createSecrets(t.Context(), cs, ns, names); err != nil {
		t.Fatal(err)
	}
	var group []*replica
	for i := range 3 {
		group = append(group, startReplica(t, cs, ns, fmt.Sprintf("replica-%d", i), mustReplicaShard(t, i, 3)))
	}
	newShard := mustReplicaShard(t, 3, 4)
	group = append(group, startReplica(t, cs, ns, "replica-3", newShard))
	stable := stableObjects(t, cs, ns, "resident-")
	for _, r := range group {
		r.waitForShard(t, r.shard, stable)
		r.syncedTo(t, r.shard, 0, 0)
	}
	s := newOwnerSampler(keys, group)
	if orphans := s.sample(); len(orphans) != 0 {
		t.Fatalf("before any reshard, %d objects in no store", len(orphans))
	}
	group[0].setShard(t, mustReplicaShard(t, 0, 4), stable)
	// [1/4, 1/3): left by replica 0, not yet taken by replica 1.
	gap, err := cache.NewShard(sharding.ShardRangeRequirement{Key: string(cache.ShardByUID), Start: "0x4000000000000000", End: "0x5555555555555555"})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for key, uid := range keysOf(t, shardedSecretList(t, cs, ns, cache.Shard{})) {
		if owns(gap, uid) {
			want = append(want, key)
		}
	}
	got := s.sample()
	slices.Sort(want)
	slices.Sort(got)
	t.Logf("after replica 0 alone moved to its new shard: %d of %d objects in no store (%d in the gap %s)", len(got), objects, len(want), gap)
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("objects in no store: %v\nwant those in the gap: %v", got, want)
	}
	for i, r := range group[1:3] {
		r.setShard(t, mustReplicaShard(t, i+1, 4), stable)
	}
	if orphans := s.sample(); len(orphans) != 0 {
		t.Errorf("after every replica moved, %d objects in no store (first %s)", len(orphans), orphans[0])
	}
}
