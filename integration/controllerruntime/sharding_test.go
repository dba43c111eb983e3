package controllerruntime

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	kcache "github.com/kreflector/cache"
)

// Two Managers, each with its cache sharded by the one-line hook, split
// the ConfigMaps between them: each reconciles only its shard's, and
// together they reconcile every one, present at the start or created
// after.
func TestManagersShardedByTheOneLineHook(t *testing.T) {
	srv := newHTTPServer(t)
	cfg := srv.RESTConfig()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	cs := kubernetes.NewForConfigOrDie(cfg)
	before, after := names("before", 40), names("after", 20)
	createConfigMaps(ctx, t, cs, "team", before)
	var replicas []*running
	for i := range 2 {
		shard, err := kcache.ReplicaShard(i, 2)
		if err != nil {
			t.Fatal(err)
		}
		replicas = append(replicas, startManagerWith(t, cfg, waitLimit, kcache.NewSharedIndexInformerWith(kcache.ReflectorOptions{Shard: &shard})))
	}
	createConfigMaps(ctx, t, cs, "team", after)
	all := append(append([]string(nil), before...), after...)
	for {
		owners := map[string]int{}
		for _, r := range replicas {
			r.seen.mu.Lock()
			for k := range r.seen.keys {
				owners[k.Name]++
			}
			r.seen.mu.Unlock()
		}
		done := len(owners) == len(all)
		for _, n := range all {
			if owners[n] > 1 {
				t.Fatalf("%s reconciled by both replicas", n)
			}
			done = done && owners[n] == 1
		}
		if done {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("not every ConfigMap reconciled by one replica: %d of %d", len(owners), len(all))
		case <-time.After(20 * time.Millisecond):
		}
	}
	for i, r := range replicas {
		r.seen.mu.Lock()
		n := len(r.seen.keys)
		r.seen.mu.Unlock()
		if n == 0 || n == len(all) {
			t.Errorf("replica %d reconciled %d of %d: not a share", i, n, len(all))
		}
	}
}
