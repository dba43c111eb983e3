//go:build e2e

package e2e

import (
	"context"
	"errors"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache"
)

// On a real kube-apiserver, in protobuf and in JSON, by LIST and by
// WatchList, unsharded and sharded (by namespace; and by UID on a compact
// store, whose records keep their UID's hash): a relist of an informer over our own ListWatch
// does not decode the ConfigMaps it holds at the resourceVersion listed
// (Stats.ItemsNotDecoded; by WatchList each decoding goroutine decodes its
// first one), and the informer then holds exactly the server's objects. The relist is asked for by an
// index function failing on a new ConfigMap for a while (see
// ErrIndexerFailed), so that nothing else changes.
func TestRelistLeavesHeldObjectsUndecoded(t *testing.T) {
	t.Parallel()
	for _, c := range []relistCase{
		{encoding: "protobuf"}, {encoding: "json"}, {encoding: "protobuf", watchList: true}, {encoding: "json", watchList: true},
		{encoding: "protobuf", sharded: true}, {encoding: "protobuf", watchList: true, sharded: true},
		{encoding: "json", watchList: true, sharded: true},
		{encoding: "protobuf", compactByUID: true}, {encoding: "protobuf", watchList: true, compactByUID: true},
	} {
		name := c.encoding
		if c.watchList {
			name += ", WatchList"
		}
		if c.sharded {
			name += ", sharded"
		}
		if c.compactByUID {
			name += ", compact, sharded by UID"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testRelistUndecoded(t, c)
		})
	}
}

// relistCase is one informer of TestRelistLeavesHeldObjectsUndecoded:
// sharded, it has the half of a shard by namespace that holds its
// namespace (so every ConfigMap, the trigger's too); compactByUID, a
// compact store and the first half of a shard by UID (about half the
// ConfigMaps; the trigger is one that falls in it).
type relistCase struct {
	encoding                         string
	watchList, sharded, compactByUID bool
}

func testRelistUndecoded(t *testing.T, c relistCase) {
	encoding, watchList := c.encoding, c.watchList
	cs := client(t, encodingConfig(testCluster.admin, encoding))
	ns := namespace(t, cs)
	var shard *cache.Shard
	if c.sharded {
		shard = namespaceShard(t, ns)
	}
	if c.compactByUID {
		s, err := cache.ReplicaShardBy(cache.ShardByUID, 0, 2)
		if err != nil {
			t.Fatal(err)
		}
		shard = &s
	}
	const n = 60
	for i := range n {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-" + strconv.Itoa(i)}, Data: map[string]string{"i": strconv.Itoa(i)}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var failing atomic.Bool
	byName := func(obj interface{}) ([]string, error) {
		cm := obj.(*corev1.ConfigMap)
		if strings.HasPrefix(cm.Name, "trigger") && failing.Load() {
			return nil, errors.New("not indexable yet")
		}
		return []string{cm.Name}, nil
	}
	o := cache.ReflectorOptions{Name: "undecoded", UseWatchList: ptr.To(watchList), Shard: shard}
	if c.compactByUID {
		o.Compact = &cache.CompactOptions{}
	}
	inf := cache.NewSharedIndexInformerWith(o)(configMapsLW(cs, ns), &corev1.ConfigMap{}, 0, cache.Indexers{"byName": byName})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { inf.RunWithContext(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	reporter := inf.(cache.InformerHealthReporter)
	if err := reporter.WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	failing.Store(true)
	createTrigger(t, cs, ns, shard)
	least := uint64(n)
	if c.compactByUID {
		held, _ := shardedConfigMapList(t, cs, ns, *shard)
		least = uint64(len(held) - 1) // the trigger is not held
	}
	if watchList {
		least -= uint64(goruntime.GOMAXPROCS(0))
	}
	for deadline := time.Now().Add(time.Minute); reporter.Stats().Reflector.ItemsNotDecoded < least; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no relist leaving the held ConfigMaps undecoded within a minute: %+v", reporter.Stats().Reflector)
		}
	}
	failing.Store(false)
	for deadline := time.Now().Add(time.Minute); !reporter.Health().Healthy; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not healthy a minute after the index function recovered: %v", reporter.Health())
		}
	}
	st := reporter.Stats().Reflector
	t.Logf("lists %v; items reused %d, not decoded %d", st.Lists, st.ItemsReused, st.ItemsNotDecoded)
	if shard == nil {
		assertMatchesServer(t, cs, "configmaps", ns, "informer", inf.GetStore().List())
		return
	}
	want, _ := shardedConfigMapList(t, cs, ns, *shard)
	assertSame(t, "the server's shard", want, "informer", inf.GetStore().List())
}

// createTrigger creates ConfigMaps named trigger-… in ns until one is in
// shard (the first, unless the shard is by UID), so that the informer's
// index function meets it.
func createTrigger(t *testing.T, cs kubernetes.Interface, ns string, shard *cache.Shard) {
	t.Helper()
	for i := 0; i < 64; i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "trigger-" + strconv.Itoa(i)}}
		got, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if shard == nil {
			return
		}
		if in, err := shard.Contains(got); err != nil || in {
			return
		}
	}
	t.Fatal("64 ConfigMaps and none in the shard")
}

// namespaceShard is the half of the space, by namespace, that holds ns.
func namespaceShard(t *testing.T, ns string) *cache.Shard {
	t.Helper()
	for i := range 2 {
		s, err := cache.ReplicaShardBy(cache.ShardByNamespace, i, 2)
		if err != nil {
			t.Fatal(err)
		}
		if in, err := s.Contains(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns}}); err == nil && in {
			return &s
		}
	}
	t.Fatalf("no half holds namespace %s", ns)
	return nil
}
