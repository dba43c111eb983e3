//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clientgocache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache"
)

// markConfigMapInShard creates ConfigMaps shard-marker-<k> in ns until
// one lands in shard, and returns that one's resourceVersion: a Reflector
// of shard that has reached it has every change made in ns before.
func markConfigMapInShard(t *testing.T, cs kubernetes.Interface, ns string, shard cache.Shard) string {
	t.Helper()
	for k := 0; k < 1000; k++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "shard-marker-"}}
		cm, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if owns(shard, cm.UID) {
			return cm.ResourceVersion
		}
	}
	t.Fatalf("1000 ConfigMaps created and none in shard %s", shard)
	return ""
}

// shardedConfigMapList LISTs the ConfigMaps in ns on cs's server at RV ""
// with shard's selector (none for the zero Shard) and returns the items.
func shardedConfigMapList(t *testing.T, cs kubernetes.Interface, ns string, shard cache.Shard) ([]interface{}, *metav1.ShardInfo) {
	t.Helper()
	l, err := cs.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{ShardSelector: shard.String()})
	if err != nil {
		t.Fatal(err)
	}
	return listItems(l), l.ShardInfo
}

// listItems returns l's items as objects.
func listItems(l *corev1.ConfigMapList) []interface{} {
	out := make([]interface{}, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out
}

// countOutside counts the objects of objs outside shard.
func countOutside(t *testing.T, shard cache.Shard, objs []interface{}) int {
	t.Helper()
	n := 0
	for _, o := range objs {
		m, err := meta.Accessor(o)
		if err != nil {
			t.Fatal(err)
		}
		if !owns(shard, m.GetUID()) {
			n++
		}
	}
	return n
}

// TestShardIgnoredByServer puts one shard selector (replica 1 of 4) to
// two kube-apiservers on the same etcd, one with the ShardedListAndWatch
// gate on and one with it off, side by side:
//
//   - on the gated server a sharded LIST holds only the shard and echoes
//     the selector; on the ungated one it holds everything and echoes
//     nothing;
//   - on the ungated server our sharded Reflector, by default, caches
//     nothing: Health becomes Degraded with ReasonShardIgnored, WaitForSync
//     fails with an error wrapping ErrShardIgnored, and it keeps retrying;
//     by LIST and by WatchList;
//   - with ShardFilterLocally it syncs on the ungated server, drops the
//     objects outside its shard (Stats.ShardDropped) and its store is the
//     gated server's shard, through a later workload too;
//   - client-go's Reflector, given the same selector through its
//     ListWatch's options, caches every object from the ungated server
//     (it cannot tell), and only the shard from the gated one.
func TestShardIgnoredByServer(t *testing.T) {
	t.Parallel()
	cs := client(t, testCluster.admin)
	ucs := client(t, testCluster.ungated(t))
	ns := namespace(t, cs)
	const existing = 200
	mustCreateConfigMaps(t, cs, ns, existing)
	shard := mustReplicaShard(t, 1, 4)

	t.Run("servers", func(t *testing.T) {
		all, _ := shardedConfigMapList(t, cs, ns, cache.Shard{})
		gated, gatedInfo := shardedConfigMapList(t, cs, ns, shard)
		ungated, ungatedInfo := shardedConfigMapList(t, ucs, ns, shard)
		t.Logf("shard %s: gated server lists %d of %d objects, echo %+v; ungated lists %d, echo %+v", shard, len(gated), len(all), gatedInfo, len(ungated), ungatedInfo)
		if gatedInfo == nil || gatedInfo.Selector != shard.String() || countOutside(t, shard, gated) != 0 || len(gated) == 0 || len(gated) == len(all) {
			t.Errorf("the gated server did not apply the selector: %d of %d objects, %d outside the shard, echo %+v", len(gated), len(all), countOutside(t, shard, gated), gatedInfo)
		}
		if ungatedInfo != nil || len(ungated) != len(all) {
			t.Errorf("the ungated server applied the selector: %d of %d objects, echo %+v", len(ungated), len(all), ungatedInfo)
		}
	})

	t.Run("pages", func(t *testing.T) {
		// A paginated sharded LIST (RV "": a consistent read) echoes the
		// selector on every page; the continue token does not carry it.
		opts := metav1.ListOptions{ShardSelector: shard.String(), Limit: 10}
		var pages, items int
		for {
			l, err := cs.CoreV1().ConfigMaps(ns).List(t.Context(), opts)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			items += len(l.Items)
			if l.ShardInfo == nil || l.ShardInfo.Selector != shard.String() {
				t.Errorf("page %d echoed %+v", pages, l.ShardInfo)
			}
			if pages == 1 && l.Continue != "" {
				next, err := cs.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{Limit: 10, Continue: l.Continue})
				if err != nil {
					t.Fatal(err)
				}
				if next.ShardInfo != nil || countOutside(t, shard, listItems(next)) == 0 {
					t.Errorf("a continued page asked for without the selector: echo %+v, %d of %d objects outside the shard", next.ShardInfo, countOutside(t, shard, listItems(next)), len(next.Items))
				}
			}
			if opts.Continue = l.Continue; opts.Continue == "" {
				break
			}
		}
		t.Logf("%d items in %d pages of at most 10, each echoing the selector", items, pages)
		if pages < 2 {
			t.Errorf("%d page(s), want several", pages)
		}
	})

	t.Run("malformed", func(t *testing.T) {
		// The gated server answers a selector it cannot parse with a 500
		// (kube-apiserver v1.37.2 wraps the parse error in a plain error,
		// not a 400); the ungated one ignores it.
		bad := "shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')"
		_, err := cs.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{ShardSelector: bad})
		var status apierrors.APIStatus
		if !errors.As(err, &status) || status.Status().Code != 500 || !strings.HasPrefix(status.Status().Message, "invalid shard selector: unsupported field path") {
			t.Errorf("gated server, selector %q: %v, want a 500 \"invalid shard selector: unsupported field path ...\"", bad, err)
		} else {
			t.Logf("gated server: %d %q (reason %q)", status.Status().Code, status.Status().Message, status.Status().Reason)
		}
		l, err := ucs.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{ShardSelector: bad})
		if err != nil || l.ShardInfo != nil {
			t.Errorf("ungated server, selector %q: %v, echo %+v; want it ignored", bad, err, l)
		}
	})

	for _, watchList := range []bool{false, true} {
		t.Run("ours refuses/watchList="+strconv.FormatBool(watchList), func(t *testing.T) {
			store := cache.NewStore(cache.MetaNamespaceKeyFunc)
			health := &healthLog{}
			r := cache.NewReflectorWithOptions(configMapsLW(ucs, ns), &corev1.ConfigMap{}, store, cache.ReflectorOptions{
				Name: t.Name(), Shard: &shard, UseWatchList: ptr.To(watchList), Backoff: quickBackoff(), OnHealthChange: health.record,
			})
			runReflector(t, r)
			ctx, cancel := context.WithTimeout(t.Context(), minute)
			defer cancel()
			h, err := health.waitFor(ctx, 0, func(h cache.Health) bool {
				return h.State == cache.Degraded && h.Reason == cache.ReasonShardIgnored
			})
			if err != nil {
				t.Fatalf("health not Degraded(%s): %v (now %+v)", cache.ReasonShardIgnored, err, r.Health())
			}
			t.Logf("health: %s %s: %v", h.State, h.Reason, h.LastError)
			// WaitForSync returns at its deadline, with the cause.
			wctx, wcancel := context.WithTimeout(t.Context(), 2*time.Second)
			err = r.WaitForSync(wctx)
			wcancel()
			if !errors.Is(err, cache.ErrShardIgnored) {
				t.Errorf("WaitForSync: %v, want an error wrapping ErrShardIgnored", err)
			} else {
				t.Logf("WaitForSync: %v", err)
			}
			// It keeps trying, with backoff (0.1 s to 1 s here).
			attempts := func() uint64 {
				st := r.Stats()
				var n uint64
				for _, c := range st.Lists {
					n += c
				}
				for _, c := range st.WatchLists {
					n += c
				}
				return n
			}
			if err := pollUntil(ctx, 100*time.Millisecond, func() bool { return attempts() >= 3 }); err != nil {
				t.Errorf("%d attempts to sync within a minute, want at least 3 (stats %+v)", attempts(), r.Stats())
			}
			if n := len(store.List()); n != 0 {
				t.Errorf("the store holds %d objects from a server that ignored the selector, want none", n)
			}
			if got := r.Health(); got.State != cache.Degraded || got.Reason != cache.ReasonShardIgnored {
				t.Errorf("health %+v, want still Degraded(%s)", got, cache.ReasonShardIgnored)
			}
		})
	}

	for _, watchList := range []bool{false, true} {
		t.Run("ours filters locally/watchList="+strconv.FormatBool(watchList), func(t *testing.T) {
			s := cache.NewStore(cache.MetaNamespaceKeyFunc)
			store := track(s)
			r := cache.NewReflectorWithOptions(configMapsLW(ucs, ns), &corev1.ConfigMap{}, store, cache.ReflectorOptions{
				Name: t.Name(), Shard: &shard, ShardFilterLocally: true, UseWatchList: ptr.To(watchList), Backoff: quickBackoff(),
			})
			runReflector(t, r)
			mustSync(t, r)
			synced := r.Stats()
			// A workload after the sync, followed through the watch.
			workload(t, cs, ns, existing, 100, 23)
			mustReachRV(t, store, markConfigMapInShard(t, cs, ns, shard))
			all, _ := shardedConfigMapList(t, cs, ns, cache.Shard{})
			want, _ := shardedConfigMapList(t, cs, ns, shard)
			assertSame(t, "the gated server's shard", want, "the store filled from the ungated server", s.List())
			st := r.Stats()
			t.Logf("items listed %d; dropped %d at the sync, %d in all; events %v; health %+v", st.ItemsListed, synced.ShardDropped, st.ShardDropped, st.Events, r.Health())
			if outside := uint64(countOutside(t, shard, all)); synced.ShardDropped == 0 || st.ShardDropped <= synced.ShardDropped {
				t.Errorf("ShardDropped %d after the sync and %d after the workload (%d objects now outside the shard): want some at the sync and more from the watch", synced.ShardDropped, st.ShardDropped, outside)
			}
			if h := r.Health(); h.State != cache.Synced {
				t.Errorf("health %+v, want Synced", h)
			}
		})
	}

	t.Run("client-go", func(t *testing.T) {
		for _, side := range []struct {
			name  string
			cs    *kubernetes.Clientset
			gated bool
		}{{"ungated", ucs, false}, {"gated", cs, true}} {
			store := clientgocache.NewStore(clientgocache.MetaNamespaceKeyFunc)
			tracked := track(store)
			lw := clientgocache.NewFilteredListWatchFromClient(side.cs.CoreV1().RESTClient(), "configmaps", ns, func(o *metav1.ListOptions) {
				o.ShardSelector = shard.String()
			})
			ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
			done := make(chan struct{})
			ref := clientgocache.NewReflectorWithOptions(lw, &corev1.ConfigMap{}, tracked, clientgocache.ReflectorOptions{Name: "client-go-" + side.name})
			go func() { ref.RunWithContext(ctx); close(done) }()
			mustReachRV(t, tracked, markConfigMapInShard(t, cs, ns, shard))
			cancel()
			<-done
			all, _ := shardedConfigMapList(t, cs, ns, cache.Shard{})
			want := all
			if side.gated {
				want, _ = shardedConfigMapList(t, cs, ns, shard)
			}
			got := store.List()
			t.Logf("client-go's Reflector on the %s server with ShardSelector %q: %d objects cached (%d outside the shard) of %d", side.name, shard, len(got), countOutside(t, shard, got), len(all))
			assertSame(t, fmt.Sprintf("the %s server's answer", side.name), want, "client-go's store", got)
			if !side.gated && countOutside(t, shard, got) == 0 {
				t.Errorf("client-go's store from the ungated server holds nothing outside the shard")
			}
		}
	})
}

// pollUntil asks ok every interval until it holds (nil) or ctx ends. It is
// for conditions nothing notifies of, such as a Reflector's retries.
func pollUntil(ctx context.Context, interval time.Duration, ok func() bool) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for !ok() {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
