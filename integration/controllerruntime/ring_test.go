package controllerruntime

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kreflector/cache/ring"
)

// forbiddenRingManager builds a manager on cfg whose cache is a ring's,
// added with AddRing, with a ConfigMap controller whose cache sync
// timeout is syncTimeout, serving its health probes on probes (none if
// empty); the ring's Lease calls are all refused with 403 while the
// returned switch is on (it starts on).
func forbiddenRingManager(t *testing.T, cfg *rest.Config, syncTimeout time.Duration, probes string) (manager.Manager, *ring.Ring, *atomic.Bool) {
	t.Helper()
	leases, forbidden := forbiddenLeases()
	r, err := ring.New(ring.Config{Client: leases.CoordinationV1(), Namespace: "ring", Name: "forbidden", Identity: "a", Buckets: 16,
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := manager.New(cfg, manager.Options{
		Cache:                  crcache.Options{NewInformer: r.NewInformer},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: probes,
		Controller:             config.Controller{SkipNameValidation: ptr.To(true), CacheSyncTimeout: syncTimeout},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := AddRing(mgr, r); err != nil {
		t.Fatal(err)
	}
	got := &seen{keys: map[types.NamespacedName]int{}}
	if err := builder.ControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Named("configmaps").Complete(got); err != nil {
		t.Fatal(err)
	}
	return mgr, r, forbidden
}

// forbiddenLeases is a fake clientset whose Lease calls are all refused
// with 403 while the returned switch is on (it starts on).
func forbiddenLeases() (*fake.Clientset, *atomic.Bool) {
	forbidden := &atomic.Bool{}
	forbidden.Store(true)
	leases := fake.NewClientset()
	leases.PrependReactor("*", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
		if !forbidden.Load() {
			return false, nil, nil
		}
		return true, nil, apierrors.NewForbidden(coordinationv1.Resource("leases"), "", errors.New("RBAC: access denied"))
	})
	return leases, forbidden
}

// A manager whose ring's Leases are forbidden ends with the ring's cause
// (the forbidden Lease error, wrapped with ring.ErrNotFormed), not with
// controller-runtime's bare "timed out waiting for cache to be synced".
func TestManagerOnAForbiddenRingEndsWithTheCause(t *testing.T) {
	srv := newHTTPServer(t)
	mgr, _, _ := forbiddenRingManager(t, srv.RESTConfig(), 3*time.Second, "")
	done := make(chan error, 1)
	go func() { done <- mgr.Start(context.Background()) }()
	select {
	case err := <-done:
		if !apierrors.IsForbidden(err) || !errors.Is(err, ring.ErrNotFormed) || !strings.Contains(err.Error(), "cannot work") {
			t.Fatalf("the manager ended with %v; want the ring's cause: its forbidden Lease calls, ring.ErrNotFormed", err)
		}
		t.Logf("the manager ended with: %v", err)
	case <-time.After(waitLimit):
		t.Fatal("the manager neither started nor failed")
	}
}

// When an informer made before Start holds the manager's caches back, the
// ring's error cannot end the manager (controller-runtime waits for its
// caches without a timeout, and cannot even be stopped meanwhile): it is
// logged at error level instead, the liveness probe fails (and the
// readiness one, Joined), the manager goes on waiting, and the ring goes
// on trying, so that once its Leases are allowed the manager starts and
// the probes pass.
func TestManagerWaitingForARingsCacheLogsTheCause(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	srv := newHTTPServer(t)
	probes := freeAddress(t)
	mgr, r, forbidden := forbiddenRingManager(t, srv.RESTConfig(), 3*time.Second, probes)
	if err := mgr.AddReadyzCheck("ring", Joined(r)); err != nil {
		t.Fatal(err)
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.ConfigMap{}, "v", func(o client.Object) []string {
		return []string{o.(*corev1.ConfigMap).Data["v"]}
	}); err != nil {
		t.Fatal(err)
	}
	mctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	mark := logs.mark()
	go func() { done <- mgr.Start(mctx) }()
	for logs.find(mark, "waits for its caches", "ring", "forbidden") == "" {
		select {
		case err := <-done:
			stop()
			t.Fatalf("the manager ended (%v) while waiting for its caches", err)
		case <-ctx.Done():
			t.Fatalf("no error line names the ring's cause; logged:\n%s", strings.Join(logs.lines, "\n"))
		case <-time.After(50 * time.Millisecond):
		}
	}
	if s := r.Status(); !s.Started || !apierrors.IsForbidden(s.LastError) {
		t.Errorf("the ring's status = %s; want it running, its last error the forbidden Lease call", s)
	}
	for path, check := range map[string]string{"/healthz": "ring-" + r.LeaseName(), "/readyz": "ring"} {
		if code, body := probe(t, probes, path); code != http.StatusInternalServerError || !strings.Contains(body, "[-]"+check+" failed") {
			t.Errorf("%s answered %d %q while the manager waits for the ring; want 500 naming %s", path, code, body, check)
		}
	}
	forbidden.Store(false)
	if err := r.WaitForSync(ctx); err != nil {
		t.Fatalf("the ring did not form once its Leases were allowed: %v", err)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		for code, body := probe(t, probes, path); code != http.StatusOK; code, body = probe(t, probes, path) {
			select {
			case <-ctx.Done():
				t.Fatalf("%s still answers %d %q after the ring formed", path, code, body)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the manager ended with %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the manager did not stop")
	}
}

// freeAddress is a local TCP address nothing listens on (it did a moment
// ago), for a server the test starts next.
func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// probe GETs path from the health probe server at addr, waiting for it to
// listen, and returns the answer's status and body.
func probe(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		resp, err := http.Get("http://" + addr + path)
		if err == nil {
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			return resp.StatusCode, string(body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s from the probe server: %v", path, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The ring's checks say its cause: while its Lease calls are refused, the
// liveness check (once the manager is stuck on the ring) and Joined fail
// with errors wrapping the forbidden Lease error and ring.ErrNotFormed,
// which controller-runtime logs with the failed check (its probes' bodies
// withhold them).
func TestRingChecksSayTheCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		leases, _ := forbiddenLeases()
		r, err := ring.New(ring.Config{Client: leases.CoordinationV1(), Namespace: "ring", Name: "checks", Identity: "a", Buckets: 16})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		ran := make(chan error, 1)
		go func() { ran <- r.Run(ctx) }()
		time.Sleep(10 * time.Second) // synctest's clock: rounds of the ring fail meanwhile
		rc := &ringWithCaches{Ring: r}
		rc.stuck.Store(true)
		for name, err := range map[string]error{"liveness": rc.alive(nil), "Joined": Joined(r)(nil)} {
			if !apierrors.IsForbidden(err) || !errors.Is(err, ring.ErrNotFormed) || !strings.Contains(err.Error(), "access denied") {
				t.Errorf("the %s check says %v; want the forbidden Lease error, with ring.ErrNotFormed", name, err)
			}
		}
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// The liveness check fails only while the manager is stuck on the ring
// and the ring's calls are failing: a ring that is merely slow (here, not
// running at all, so nothing failed) is no reason to restart.
func TestLivenessNeedsFailingCalls(t *testing.T) {
	r, err := ring.New(ring.Config{Client: fake.NewClientset().CoordinationV1(), Namespace: "ring", Name: "slow", Identity: "a", Buckets: 16})
	if err != nil {
		t.Fatal(err)
	}
	rc := &ringWithCaches{Ring: r}
	if err := rc.alive(nil); err != nil {
		t.Fatalf("alive before the manager is stuck: %v", err)
	}
	rc.stuck.Store(true)
	if err := rc.alive(nil); err != nil {
		t.Fatalf("alive while stuck on a ring whose calls do not fail: %v", err)
	}
}

// A ring whose Run returns at once (here, already running elsewhere, as
// when mgr.Add(r) came on top of AddRing) ends AddRing's runnable with
// Run's error at once, not after the give-up time, even while the ring
// cannot form (its Leases forbidden).
func TestRunsErrorEndsTheRunnableAtOnce(t *testing.T) {
	leases, _ := forbiddenLeases()
	r, err := ring.New(ring.Config{Client: leases.CoordinationV1(), Namespace: "ring", Name: "twice", Identity: "a", Buckets: 16})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := make(chan error, 1)
	go func() { first <- r.Run(ctx) }()
	for !r.Status().Started {
		select {
		case err := <-first:
			t.Fatalf("the first Run returned: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	rc := &ringWithCaches{Ring: r, giveUp: time.Hour, cachesStarted: make(chan struct{}), log: logr.Discard()}
	done := make(chan error, 1)
	go func() { done <- rc.Start(ctx) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "twice") {
			t.Fatalf("the runnable ended with %v; want Run's error", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("the runnable waited for the give-up time although Run had returned")
	}
	cancel()
	<-first
}
