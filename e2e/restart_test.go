//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kreflector/cache"
)

// The tests in this file stop and start the servers. They must not call
// t.Parallel: Go runs parallel tests only once every sequential one has
// finished, so nothing else runs while a server is down. Each leaves both
// servers running and kube-apiserver ready (restoreCluster).

// restartWait bounds the wait for the Reflector to converge after a
// restart, which includes the new kube-apiserver filling its watch cache.
const restartWait = 2 * time.Minute

// quickBackoff keeps the Reflector's retries while a server is down
// between 0.1 s and 1 s, so that it notices the server's return quickly.
func quickBackoff() *wait.Backoff {
	return &wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Cap: time.Second, Steps: 10, Jitter: 0.2}
}

// restartSetup is a Reflector watching ns that has synced and followed
// a first workload.
type restartSetup struct {
	ns     string
	r      *cache.Reflector
	s      cache.Store
	store  *trackingStore
	health *healthLog
}

// startWatching creates ns with existing ConfigMaps and a Reflector on
// it with quickBackoff, runs it until it has synced and followed a
// workload, and registers restoreCluster.
func startWatching(t *testing.T, existing int) *restartSetup {
	t.Helper()
	cs := client(t, testCluster.admin)
	x := &restartSetup{ns: namespace(t, cs), health: &healthLog{}}
	mustCreateConfigMaps(t, cs, x.ns, existing)
	x.s = cache.NewStore(cache.MetaNamespaceKeyFunc)
	x.store = track(x.s)
	x.r = cache.NewReflectorWithOptions(configMapsLW(cs, x.ns), &corev1.ConfigMap{}, x.store,
		cache.ReflectorOptions{Name: t.Name(), Backoff: quickBackoff(), OnHealthChange: x.health.record})
	runReflector(t, x.r)
	mustSync(t, x.r)
	mustReachRV(t, x.store, workload(t, cs, x.ns, existing, 100, 1))
	testCluster.restoreCluster(t)
	return x
}

// converge makes a workload after a restart and checks that the Reflector
// follows it to an exact copy of the server, healthy again.
func (x *restartSetup) converge(t *testing.T, existing int) {
	t.Helper()
	cs := client(t, testCluster.admin)
	last := workload(t, cs, x.ns, existing, 100, 2)
	ctx, cancel := context.WithTimeout(t.Context(), restartWait)
	defer cancel()
	if err := x.store.waitRV(ctx, last); err != nil {
		t.Fatalf("after the restart: %v (health %+v)", err, x.r.Health())
	}
	assertMatchesServer(t, cs, "configmaps", x.ns, "store", x.s.List())
	// The store can reach the workload's end inside the Replace of a
	// relist, a moment before the Reflector marks itself Synced, so the
	// health is waited for rather than read once.
	// Every change of health is recorded, and wakes the wait.
	if err := x.health.n.waitUntil(ctx, func() bool { return x.r.Health().State == cache.Synced }); err != nil {
		t.Errorf("health after converging: %+v, want Synced (%v)", x.r.Health(), err)
	}
}

// logStats logs what the Reflector did while the server was away.
func logStats(t *testing.T, before, after cache.Stats) {
	t.Logf("watches opened %d → %d; watch ends %v; lists %v; watch lists %v",
		before.WatchesOpened, after.WatchesOpened, after.WatchEnds, after.Lists, after.WatchLists)
}

func TestAPIServerRestartMidWatch(t *testing.T) {
	for _, how := range []struct {
		name string
		down func(*cluster, *testing.T, string)
	}{
		{"SIGTERM", (*cluster).stopServer}, // a graceful shutdown: watches end cleanly
		{"SIGKILL", (*cluster).killServer}, // a crash: connections just drop
	} {
		t.Run(how.name, func(t *testing.T) {
			const existing = 200
			x := startWatching(t, existing)
			before := x.r.Stats()
			mark := x.health.mark()
			how.down(testCluster, t, apiServer)

			ctx, cancel := context.WithTimeout(t.Context(), minute)
			defer cancel()
			down, err := x.health.waitFor(ctx, mark, func(h cache.Health) bool { return h.State == cache.Degraded })
			if err != nil {
				t.Fatalf("health not Degraded while kube-apiserver is down: %v (now %+v)", err, x.r.Health())
			}
			t.Logf("while kube-apiserver is down: %s %s (%v)", down.State, down.Reason, down.LastError)

			testCluster.startServer(t, apiServer)
			x.converge(t, existing)
			after := x.r.Stats()
			logStats(t, before, after)
			if after.WatchesOpened <= before.WatchesOpened {
				t.Errorf("no watch opened after the restart: %d then %d", before.WatchesOpened, after.WatchesOpened)
			}
			if n := after.WatchEnds[cache.WatchUnreachable] - before.WatchEnds[cache.WatchUnreachable]; n == 0 {
				t.Errorf("no watch refused while kube-apiserver was down: watch ends %v", after.WatchEnds)
			}
		})
	}
}

func TestEtcdRestartMidWatch(t *testing.T) {
	const existing = 200
	x := startWatching(t, existing)
	before := x.r.Stats()
	testCluster.stopServer(t, etcdServer)
	testCluster.startServer(t, etcdServer)
	// kube-apiserver stayed up; it is ready again once it reaches etcd.
	testCluster.startServer(t, apiServer)
	x.converge(t, existing)
	logStats(t, before, x.r.Stats())
}
