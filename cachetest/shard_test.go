package cachetest_test

import (
	"fmt"
	"hash/fnv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/cachetest"
)

// Selectors written out as a client sends them, so that the tests do not
// take the package's own rendering on trust.
const (
	lowerHalf = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
	upperHalf = "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"
)

// fnv64a is the 64-bit FNV-1a hash of s, the hash shards are ranges of,
// computed here independently of the code under test.
func fnv64a(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// halves are ConfigMaps whose uids hash into known halves of the hash
// space: hi* into the upper, lo* into the lower.
var halves = []struct{ key, uid string }{
	{"ns/hi1", "blue"}, {"ns/hi2", "white"}, {"ns/lo1", "green"}, {"ns/lo2", "left"},
}

// createHalves creates the halves in order (resourceVersions 1 to 4),
// having checked that their uids hash where their names say.
func createHalves(t *testing.T, r *cachetest.Resource) {
	t.Helper()
	for _, o := range halves {
		if upper := fnv64a(o.uid)>>63 == 1; upper != strings.Contains(o.key, "hi") {
			t.Fatalf("the uid %q of %s hashes to %#x", o.uid, o.key, fnv64a(o.uid))
		}
		createUID(t, r, o.key, o.uid)
	}
}

// createUID creates ConfigMap "ns/name" with the given uid.
func createUID(t *testing.T, r *cachetest.Resource, key, uid string) {
	t.Helper()
	ns, name, _ := strings.Cut(key, "/")
	c := cm(ns, name)
	c.UID = types.UID(uid)
	if _, err := r.Create(t.Context(), c, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// shardInfo renders a list's ShardInfo: its selector, or "<nil>".
func shardInfo(l *corev1.ConfigMapList) string {
	if l.ShardInfo == nil {
		return "<nil>"
	}
	return l.ShardInfo.Selector
}

// A sharded LIST returns exactly the objects whose uid hashes into the
// range, and echoes the selector; an unsharded one has no ShardInfo.
func TestShardedListReturnsTheShardAndEchoesIt(t *testing.T) {
	_, cms := newServer(t, cachetest.Options{})
	createHalves(t, cms)
	for _, tc := range []struct {
		name string
		opts metav1.ListOptions
		want []string
		echo string
	}{
		{"lower half", metav1.ListOptions{ShardSelector: lowerHalf}, []string{"ns/lo1@3", "ns/lo2@4"}, lowerHalf},
		{"upper half", metav1.ListOptions{ShardSelector: upperHalf}, []string{"ns/hi1@1", "ns/hi2@2"}, upperHalf},
		{"from the watch cache", metav1.ListOptions{ShardSelector: upperHalf, ResourceVersion: "0"}, []string{"ns/hi1@1", "ns/hi2@2"}, upperHalf},
		{"unsharded", metav1.ListOptions{}, []string{"ns/hi1@1", "ns/hi2@2", "ns/lo1@3", "ns/lo2@4"}, "<nil>"},
	} {
		got, l := mustList(t, cms, tc.opts)
		if !equal(got, tc.want) || shardInfo(l) != tc.echo {
			t.Errorf("%s: %v with ShardInfo %s, want %v with %s", tc.name, got, shardInfo(l), tc.want, tc.echo)
		}
	}
}

// kube-apiserver echoes the selector it parsed, term by term in the
// request's order: quotes and spacing come back canonical, ranges are
// neither sorted nor merged.
func TestShardedListEchoesTheParsedSelector(t *testing.T) {
	_, cms := newServer(t, cachetest.Options{})
	createHalves(t, cms)
	sent := `  shardRange( object.metadata.uid ,"0x8000000000000000","0x10000000000000000")||shardRange(object.metadata.uid,'0x0000000000000000','0x1000000000000000') `
	want := upperHalf + " || shardRange(object.metadata.uid, '0x0000000000000000', '0x1000000000000000')"
	got, l := mustList(t, cms, metav1.ListOptions{ShardSelector: sent})
	if !equal(got, []string{"ns/hi1@1", "ns/hi2@2", "ns/lo1@3"}) || shardInfo(l) != want {
		t.Fatalf("%v with ShardInfo %q, want hi1, hi2, lo1 with %q", got, shardInfo(l), want)
	}
}

// spreadUIDs creates n ConfigMaps "ns/oNN" whose uids (UUIDs, as the real
// server makes) spread over the hash space, and returns each key's hash.
func spreadUIDs(t *testing.T, r *cachetest.Resource, n int) map[string]uint64 {
	t.Helper()
	hashes := map[string]uint64{}
	for i := range n {
		key := fmt.Sprintf("ns/o%02d", i)
		uid := fmt.Sprintf("%08x-0000-4000-8000-000000000000", uint32(i)*2654435761)
		createUID(t, r, key, uid)
		hashes[key] = fnv64a(uid)
	}
	return hashes
}

// lister lists ConfigMaps, in process or over HTTP.
type lister func(metav1.ListOptions) (*corev1.ConfigMapList, error)

// inProcess lists through r's ListWithContext.
func inProcess(t *testing.T, r *cachetest.Resource) lister {
	return func(opts metav1.ListOptions) (*corev1.ConfigMapList, error) { return list(t, r, opts) }
}

// listShard lists every page of the shard, limit objects a page, checking
// that each page echoes the selector and counts no remaining items; it
// returns the keys listed.
func listShard(t *testing.T, list lister, sel string, limit int64) []string {
	t.Helper()
	var keys []string
	opts := metav1.ListOptions{ShardSelector: sel, Limit: limit}
	for {
		l, err := list(opts)
		if err != nil {
			t.Fatalf("list %q: %v", sel, err)
		}
		if shardInfo(l) != sel || l.RemainingItemCount != nil {
			t.Fatalf("a page of %q has ShardInfo %s, remainingItemCount %v", sel, shardInfo(l), l.RemainingItemCount)
		}
		for _, c := range l.Items {
			keys = append(keys, c.Namespace+"/"+c.Name)
		}
		if opts.Continue = l.Continue; opts.Continue == "" {
			return keys
		}
	}
}

// expectPartition lists the shards of 2 and of 4 replicas page by page
// and fails t unless they partition the objects: each object listed by
// exactly one replica, the one whose half or quarter of the hash space
// its uid hashes into (hashes maps keys to those hashes).
func expectPartition(t *testing.T, list lister, hashes map[string]uint64) {
	t.Helper()
	for _, n := range []int{2, 4} {
		owner := map[string]int{}
		for i := range n {
			shard, err := cache.ReplicaShard(i, n)
			if err != nil {
				t.Fatal(err)
			}
			keys := listShard(t, list, shard.String(), 5)
			if len(keys) == 0 {
				t.Errorf("replica %d of %d lists nothing: the uids do not spread", i, n)
			}
			for _, k := range keys {
				if prev, dup := owner[k]; dup {
					t.Errorf("%s listed by replicas %d and %d of %d", k, prev, i, n)
				}
				owner[k] = i
				if want := int(hashes[k] / (^uint64(0)/uint64(n) + 1)); want != i {
					t.Errorf("%s (hash %#x) listed by replica %d of %d, belongs to %d", k, hashes[k], i, n, want)
				}
			}
		}
		if len(owner) != len(hashes) {
			t.Errorf("%d replicas list %d of the %d objects", n, len(owner), len(hashes))
		}
	}
}

// The shards of 2 and of 4 replicas, listed page by page, partition the
// objects.
func TestShardedListReplicaShardsPartition(t *testing.T) {
	_, cms := newServer(t, cachetest.Options{})
	expectPartition(t, inProcess(t, cms), spreadUIDs(t, cms, 24))
}

// A shard over namespaces combines with the handle's namespace and with
// label and field selectors; a page the shard filters empty still echoes
// it.
func TestShardedListCombinesWithSelectorsAndNamespaces(t *testing.T) {
	_, cms := newServer(t, cachetest.Options{})
	if fnv64a("ns")>>63 != 0 || fnv64a("default")>>63 != 1 {
		t.Fatal("namespace ns must hash into the lower half, default into the upper")
	}
	if err := cms.CreateAll(t.Context(), cm("default", "x", "app", "web"), cm("ns", "x", "app", "web"), cm("ns", "y", "app", "db"), cm("ns", "z", "app", "web")); err != nil {
		t.Fatal(err)
	}
	lower := "shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')"
	for _, tc := range []struct {
		name string
		r    *cachetest.Resource
		opts metav1.ListOptions
		want []string
	}{
		{"shard alone", cms, metav1.ListOptions{}, []string{"ns/x@2", "ns/y@3", "ns/z@4"}},
		{"and a label", cms, metav1.ListOptions{LabelSelector: "app=web"}, []string{"ns/x@2", "ns/z@4"}},
		{"and a field", cms, metav1.ListOptions{FieldSelector: "metadata.name=x"}, []string{"ns/x@2"}},
		{"in its namespace", cms.Namespace("ns"), metav1.ListOptions{LabelSelector: "app=db"}, []string{"ns/y@3"}},
		{"in another namespace", cms.Namespace("default"), metav1.ListOptions{}, []string{}},
	} {
		tc.opts.ShardSelector = lower
		got, l := mustList(t, tc.r, tc.opts)
		if !equal(got, tc.want) || shardInfo(l) != lower {
			t.Errorf("%s: %v with ShardInfo %s, want %v with the selector", tc.name, got, shardInfo(l), tc.want)
		}
	}
}

// A malformed shard selector is 400 BadRequest whose message carries the
// parse error, for LIST, WATCH and DeleteCollection alike.
func TestShardSelectorMalformedIsBadRequest(t *testing.T) {
	_, cms := newServer(t, cachetest.Options{})
	createHalves(t, cms)
	for _, tc := range []struct{ sel, says string }{
		{"shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')", `unsupported key "object.metadata.name"`},
		{"shardRange(object.metadata.uid, '0x8000000000000000', '0x0000000000000000')", "empty or inverted"},
		{"shardRange(object.metadata.uid, '0x0', '0x8000000000000000')", "16 lowercase hex digits"},
		{"metadata.uid in (a)", "want shardRange("},
		{"  ", "empty selector"},
	} {
		_, parseErr := cache.ParseShard(tc.sel)
		want := "invalid shard selector: " + parseErr.Error()
		opts := metav1.ListOptions{ShardSelector: tc.sel}
		_, listErr := cms.List(opts)
		_, watchErr := cms.Watch(opts)
		_, delErr := cms.DeleteCollection(t.Context(), metav1.DeleteOptions{}, opts)
		for verb, err := range map[string]error{"list": listErr, "watch": watchErr, "deletecollection": delErr} {
			if !apierrors.IsBadRequest(err) || err.Error() != want || !strings.Contains(want, tc.says) {
				t.Errorf("%s %q: %v; want 400 %q (saying %s)", verb, tc.sel, err, want, tc.says)
			}
		}
	}
	if objs, _ := cms.Objects(); len(objs) != len(halves) {
		t.Fatalf("%d objects left, want all %d", len(objs), len(halves))
	}
}

// DeleteCollection with a shard selector deletes only the shard's objects.
func TestShardedDeleteCollection(t *testing.T) {
	_, cms := newServer(t, cachetest.Options{})
	createHalves(t, cms)
	n, err := cms.DeleteCollection(t.Context(), metav1.DeleteOptions{}, metav1.ListOptions{ShardSelector: upperHalf})
	if err != nil || n != 2 {
		t.Fatalf("deleted %d, %v; want 2", n, err)
	}
	if got, _ := mustList(t, cms, metav1.ListOptions{}); !equal(got, []string{"ns/lo1@3", "ns/lo2@4"}) {
		t.Fatalf("left %v, want the lower half", got)
	}
}

// An Unstructured list is filtered but carries no ShardInfo: kube-apiserver
// 1.37 sets it only on list types with ListMeta, which custom resources'
// UnstructuredLists are not.
func TestShardedUnstructuredListHasNoShardInfo(t *testing.T) {
	srv, _ := newServer(t, cachetest.Options{})
	widgets := srv.Resource(cachetest.Type{Resource: "widgets", Object: widget()})
	for _, o := range halves {
		w := widget()
		w.SetNamespace("ns")
		w.SetName(strings.TrimPrefix(o.key, "ns/"))
		w.SetUID(types.UID(o.uid))
		if _, err := widgets.Create(t.Context(), w, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	out, err := widgets.List(metav1.ListOptions{ShardSelector: lowerHalf})
	if err != nil {
		t.Fatal(err)
	}
	ul := out.(*unstructured.UnstructuredList)
	_, echoed, _ := unstructured.NestedFieldNoCopy(ul.Object, "metadata", "shardInfo")
	if got := ids(t, ul); !equal(got, []string{"ns/lo1@3", "ns/lo2@4"}) || echoed {
		t.Fatalf("%v, shardInfo set %v; want the lower half without one", got, echoed)
	}
}

// A sharded watch sends the changes of the shard's objects only, and
// bookmarks carrying every change's resourceVersion, in the shard or not.
func TestShardedWatchSendsOnlyTheShard(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, cms := newServer(t, cachetest.Options{})
		createHalves(t, cms)
		w := openWatch(t, cms, metav1.ListOptions{ShardSelector: lowerHalf, ResourceVersion: "4", AllowWatchBookmarks: true})
		update(t, cms, "ns/hi1")            // 5
		update(t, cms, "ns/lo1")            // 6
		remove(t, cms, "ns/hi2")            // 7
		createUID(t, cms, "ns/hi3", "red")  // 8
		createUID(t, cms, "ns/lo3", "beta") // 9
		remove(t, cms, "ns/lo2")            // 10
		expectEvents(t, w, "MODIFIED ns/lo1@6", "ADDED ns/lo3@9", "DELETED ns/lo2@10")
		update(t, cms, "ns/hi1") // 11
		expectEvents(t, w)
		synctest.Wait()
		time.Sleep(time.Minute)
		expectEvents(t, w, "BOOKMARK @11")
		fromState := openWatch(t, cms, metav1.ListOptions{ShardSelector: upperHalf})
		expectEvents(t, fromState, "ADDED ns/hi1@11", "ADDED ns/hi3@8")
	})
}

// A sharded WatchList streams the shard's objects, the end bookmark, then
// the shard's changes.
func TestShardedWatchList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, cms := newServer(t, cachetest.Options{})
		createHalves(t, cms)
		opts := watchList("")
		opts.ShardSelector = upperHalf
		w := openWatch(t, cms, opts)
		expectEvents(t, w, "ADDED ns/hi1@1", "ADDED ns/hi2@2", "BOOKMARK @4 end")
		update(t, cms, "ns/lo1")
		update(t, cms, "ns/hi2")
		expectEvents(t, w, "MODIFIED ns/hi2@6")
	})
}
