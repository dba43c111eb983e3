package cache

import (
	"fmt"
	goruntime "runtime"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache/cachetest"
	"github.com/kreflector/cache/internal/listwatch"
)

// A sharded informer's relist, by LIST and by WatchList, leaves the
// objects it holds in its shard undecoded, as an unsharded one does, and
// ends holding exactly the server's objects in the shard; a compact
// store's records too, by namespace (read from the record's key) and by
// UID (its hash, kept in the record).
func TestShardedRelistLeavesHeldObjectsUndecoded(t *testing.T) {
	for _, c := range []shardedRelistCase{
		{name: "LIST", key: ShardByUID, skips: true},
		{name: "WatchList", watchList: true, key: ShardByUID, skips: true},
		{name: "LIST, compact, by namespace", compact: true, key: ShardByNamespace, skips: true},
		{name: "WatchList, compact, by namespace", watchList: true, compact: true, key: ShardByNamespace, skips: true},
		{name: "LIST, compact, by UID", compact: true, key: ShardByUID, skips: true},
		{name: "WatchList, compact, by UID", watchList: true, compact: true, key: ShardByUID, skips: true},
	} {
		t.Run(c.name, func(t *testing.T) { testShardedRelist(t, c) })
	}
}

type shardedRelistCase struct {
	name                      string
	watchList, compact, skips bool
	key                       ShardKey
}

func testShardedRelist(t *testing.T, c shardedRelistCase) {
	srv := cachetest.NewServer(cachetest.Options{})
	t.Cleanup(srv.Close)
	cms := srv.Resource(cachetest.Type{Resource: "configmaps", Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}})
	srv.Start()
	for i := range 48 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns-%d", i%8), Name: fmt.Sprintf("cm-%d", i)}}
		if _, err := cms.Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	sh, err := ReplicaShardBy(c.key, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	o := ReflectorOptions{Shard: &sh, UseWatchList: ptr.To(c.watchList)}
	if c.compact {
		o.Compact = &CompactOptions{}
	}
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	inf := NewSharedIndexInformerWith(o)(listwatch.Typed(cs.CoreV1().ConfigMaps(""), "configmaps", nil), &corev1.ConfigMap{}, 0, Indexers{})
	t.Cleanup(runInformer(t, inf))
	reporter := inf.(InformerHealthReporter)
	if err := reporter.WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	held := len(inf.GetStore().ListKeys())
	// The next watch call is answered 410: the one resuming after the
	// watch that follows the sync is closed, or that watch itself if its
	// call comes after this.
	srv.FailNext(cachetest.VerbWatch, 1, cachetest.Error(apierrors.NewResourceExpired("too old resource version")))
	for deadline := time.Now().Add(time.Minute); srv.CloseWatches() == 0 && srv.Stats().Expired == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no watch to close within a minute")
		}
	}
	waitRelisted(t, reporter, held)
	st := reporter.Stats().Reflector
	least, most := uint64(0), uint64(0)
	if c.skips {
		least, most = uint64(held), uint64(held)
		if c.watchList {
			least -= uint64(min(held, goruntime.GOMAXPROCS(0)))
		}
	}
	if st.ItemsReused != uint64(held) || st.ItemsNotDecoded < least || st.ItemsNotDecoded > most {
		t.Fatalf("ItemsReused %d, ItemsNotDecoded %d; want %d and %d to %d (%+v)", st.ItemsReused, st.ItemsNotDecoded, held, least, most, st)
	}
	checkShardHeld(t, inf, cms, sh)
}

// waitRelisted waits, for up to a minute, until a relist has reused
// the informer's held objects (counted as it ends) and it is healthy.
func waitRelisted(t *testing.T, reporter InformerHealthReporter, held int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		st := reporter.Stats().Reflector
		if st.ItemsReused >= uint64(held) && reporter.Health().Healthy {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no relist within a minute: %+v", st)
		}
	}
}

// checkShardHeld fails t unless inf holds exactly the server's objects
// in sh.
func checkShardHeld(t *testing.T, inf SharedIndexInformer, res *cachetest.Resource, sh Shard) {
	t.Helper()
	list, err := res.List(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, obj := range list.(*corev1.ConfigMapList).Items {
		if in, err := sh.Contains(&obj); err != nil || !in {
			continue
		}
		want = append(want, obj.Namespace+"/"+obj.Name+"@"+obj.ResourceVersion)
	}
	var got []string
	for _, obj := range inf.GetStore().List() {
		cm := obj.(*corev1.ConfigMap)
		got = append(got, cm.Namespace+"/"+cm.Name+"@"+cm.ResourceVersion)
	}
	slices.Sort(want)
	slices.Sort(got)
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Fatalf("the informer holds %v, the server's shard %v", got, want)
	}
}

// A sharded relist's lookup answers only for held objects in the shard: a
// compact store's records by the namespace in their key or by the hash of
// the UID they keep, never for an object or a record without a UID.
func TestShardedHeldLookup(t *testing.T) {
	in, out := &corev1.ConfigMap{}, &corev1.ConfigMap{}
	byUID, err := ReplicaShardBy(ShardByUID, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; in.UID == "" || out.UID == ""; i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint(i), UID: types.UID(fmt.Sprintf("uid-%d", i))}}
		if ok, _ := byUID.Contains(cm); ok {
			in = cm
		} else {
			out = cm
		}
	}
	byNS, err := ReplicaShardBy(ShardByNamespace, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	nsIn, nsOut := "", ""
	for i := 0; nsIn == "" || nsOut == ""; i++ {
		ns := fmt.Sprintf("ns-%d", i)
		if ok, _ := byNS.Contains(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns}}); ok {
			nsIn = ns
		} else {
			nsOut = ns
		}
	}
	noUID := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "y"}}
	var holdsNoUID Shard // the half that holds the hash of an empty UID
	for i := range 2 {
		if s, err := ReplicaShardBy(ShardByUID, i, 2); err == nil {
			if ok, _ := s.Contains(noUID); ok {
				holdsNoUID = s
			}
		}
	}
	record := &compactRecord{key: "x/y", rv: 1}
	recIn := &compactRecord{key: "ns/y", rv: 1, uid: uidHash(in)}
	recOut := &compactRecord{key: "ns/y", rv: 1, uid: uidHash(out)}
	if recIn.uid == 0 || recOut.uid == 0 {
		t.Fatal("a UID hashed to nothing")
	}
	for _, c := range []struct {
		name  string
		shard Shard
		held  any
		ns    string
		want  bool
	}{
		{"in the shard", byUID, in, "ns", true},
		{"outside the shard", byUID, out, "ns", false},
		{"a record in the shard, by UID", byUID, recIn, "ns", true},
		{"a record outside the shard, by UID", byUID, recOut, "ns", false},
		{"a record without a UID", holdsNoUID, record, "ns", false},
		{"without a UID", holdsNoUID, noUID, "ns", false},
		{"a record in the shard, by namespace", byNS, record, nsIn, true},
		{"a record outside the shard, by namespace", byNS, record, nsOut, false},
	} {
		f := newShardSpec(c.shard, false).heldIn(func(string, string, string) (any, bool) { return c.held, true })
		if got, ok := f(c.ns, "y", "1"); ok != c.want || (ok && got != c.held) {
			t.Errorf("%s: answered %v, %v; want %v", c.name, got, ok, c.want)
		}
	}
	if newShardSpec(byUID, false).heldIn(nil) != nil {
		t.Error("no lookup to wrap, yet one is offered")
	}
}

// A sharded LIST page's check keeps the items that stand for held
// objects unchecked (a record, which has no metadata to check), drops
// those outside the shard when filtering locally, and filters the
// stand-ins as it filters the items, so that they stay aligned.
func TestShardItemsKeepStandInsAligned(t *testing.T) {
	sh, err := ReplicaShardBy(ShardByNamespace, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	cm := func(ns string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"}}
	}
	var in, out []*corev1.ConfigMap
	for i := 0; len(in) < 2 || len(out) < 2; i++ {
		o := cm(fmt.Sprintf("ns-%d", i))
		if ok, _ := sh.Contains(o); ok {
			in = append(in, o)
		} else {
			out = append(out, o)
		}
	}
	record := &compactRecord{key: "held/x", rv: 1}
	before := cm("an earlier page's")
	items := []any{before, in[0], out[0], record, in[1], out[1]}
	held := []any{nil, nil, record, nil, nil}
	c := newShardSpec(sh, true).newCheck()
	kept, keptHeld, err := c.items(items, 1, held)
	if err != nil {
		t.Fatal(err)
	}
	if want := []any{before, in[0], record, in[1]}; !slices.Equal(kept, want) {
		t.Fatalf("kept %v, want %v", kept, want)
	}
	if want := []any{nil, record, nil}; !slices.Equal(keptHeld, want) {
		t.Fatalf("stand-ins %v, want %v", keptHeld, want)
	}
	if c.dropped != 2 || c.inShard != 3 {
		t.Fatalf("dropped %d, in the shard %d; want 2 and 3", c.dropped, c.inShard)
	}
}
