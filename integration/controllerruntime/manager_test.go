package controllerruntime

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kcache "github.com/kreflector/cache"
	"github.com/kreflector/cache/cachetest"
)

// waitLimit bounds every wait: a failure to converge is a hang, not a
// slow pass.
const waitLimit = 90 * time.Second

// seen is a reconciler that records every key it is asked to reconcile.
type seen struct {
	mu   sync.Mutex
	keys map[types.NamespacedName]int
}

func (s *seen) Reconcile(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[req.NamespacedName]++
	return reconcile.Result{}, nil
}

// has reports whether every name in ns has been reconciled at least once.
func (s *seen) has(ns string, names []string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range names {
		if s.keys[types.NamespacedName{Namespace: ns, Name: n}] == 0 {
			return false
		}
	}
	return true
}

// logLines is a logr sink's output, safe for concurrent writes.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, prefix+" "+args)
}

// mark is the number of lines logged so far, for find.
func (l *logLines) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lines)
}

// find returns the first line containing every one of words, or "",
// among the lines logged after mark (a test's mark taken at its start
// keeps it from finding an earlier test's lines, or its own earlier
// run's under -count).
func (l *logLines) find(mark int, words ...string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines[mark:] {
		lower := strings.ToLower(line)
		all := true
		for _, w := range words {
			all = all && strings.Contains(lower, strings.ToLower(w))
		}
		if all {
			return line
		}
	}
	return ""
}

// running is a started Manager with a ConfigMap reconciler.
type running struct {
	mgr  manager.Manager
	seen *seen
	// done is closed when Start has returned, with its result in err.
	done chan struct{}
	err  error
}

// logs holds every line logged through controller-runtime's global logger,
// which is where the informers' (and so the Reflectors') logs go.
var logs = &logLines{}

func TestMain(m *testing.M) {
	crlog.SetLogger(funcr.New(logs.add, funcr.Options{Verbosity: 4}))
	os.Exit(m.Run())
}

// startManager starts a Manager on cfg whose cache builds kreflector's
// informers through the one-line hook, watching ConfigMaps with a
// recording reconciler. It is stopped when t ends.
func startManager(t *testing.T, cfg *rest.Config, syncTimeout time.Duration) *running {
	t.Helper()
	return startManagerWith(t, cfg, syncTimeout, kcache.NewSharedIndexInformer)
}

// startManagerWith is startManager with the cache's informers built by
// newInformer.
func startManagerWith(t *testing.T, cfg *rest.Config, syncTimeout time.Duration, newInformer func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer) *running {
	t.Helper()
	mgr, err := manager.New(cfg, manager.Options{
		Cache:   crcache.Options{NewInformer: newInformer},
		Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{
			SkipNameValidation: ptr.To(true),
			CacheSyncTimeout:   syncTimeout,
		},
	})
	if err != nil {
		t.Fatalf("manager.New: %v", err)
	}
	r := &running{mgr: mgr, seen: &seen{keys: map[types.NamespacedName]int{}}, done: make(chan struct{})}
	if err := builder.ControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Named("configmaps").Complete(r.seen); err != nil {
		t.Fatalf("building the controller: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(r.done)
		r.err = mgr.Start(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(waitLimit):
			t.Errorf("manager did not stop within %v", waitLimit)
		}
	})
	return r
}

// waitReconciled waits until every name in ns has been reconciled.
func (r *running) waitReconciled(ctx context.Context, t *testing.T, ns string, names []string) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !r.seen.has(ns, names) {
		select {
		case <-r.done:
			t.Fatalf("manager stopped: %v", r.err)
		case <-ctx.Done():
			t.Fatalf("not every ConfigMap was reconciled: %v", ctx.Err())
		case <-tick.C:
		}
	}
}

// checkInformerIsOurs fails t unless the Manager's ConfigMap informer is
// kreflector's and reports itself synced.
func (r *running) checkInformerIsOurs(ctx context.Context, t *testing.T) {
	t.Helper()
	inf, err := r.mgr.GetCache().GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	ours, ok := inf.(interface{ WaitForSync(context.Context) error })
	if !ok {
		t.Fatalf("the Manager's informer is a %T, not kreflector's", inf)
	}
	if err := ours.WaitForSync(ctx); err != nil {
		t.Fatalf("WaitForSync: %v", err)
	}
}

// createConfigMaps creates ns/name for each name through cs.
func createConfigMaps(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, names []string) {
	t.Helper()
	for _, n := range names {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n}, Data: map[string]string{"v": "1"}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s/%s: %v", ns, n, err)
		}
	}
}

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return out
}

// checkReconcilesEverything: a Manager built with the hook reconciles every
// ConfigMap that exists when it starts and every one created afterwards.
func checkReconcilesEverything(t *testing.T, cfg *rest.Config, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	cs := kubernetes.NewForConfigOrDie(cfg)
	before, after := names("before", 30), names("after", 10)
	createConfigMaps(ctx, t, cs, ns, before)
	r := startManager(t, cfg, waitLimit)
	r.waitReconciled(ctx, t, ns, before)
	r.checkInformerIsOurs(ctx, t)
	createConfigMaps(ctx, t, cs, ns, after)
	r.waitReconciled(ctx, t, ns, after)
}

// checkForbiddenIsVisible: for a user the server refuses, the Manager's
// start fails, the reason (Forbidden) is in its log, and the informer's
// WaitForSync returns it.
func checkForbiddenIsVisible(t *testing.T, cfg *rest.Config, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	mark := logs.mark()
	r := startManager(t, cfg, 3*time.Second)
	select {
	case <-r.done:
		if r.err == nil {
			t.Fatal("manager started for a user without rights")
		}
		t.Logf("manager start failed as expected: %v", r.err)
	case <-ctx.Done():
		t.Fatal("manager neither started nor failed")
	}
	// Besides the Reflector's own "Failed to watch" lines, the informer
	// says why it never synced when controller-runtime gives up on it.
	if line := logs.find(mark, "stopped before it synced", "forbidden"); line == "" {
		t.Fatalf("no log line says the informer did not sync because it is forbidden; logged:\n%s", strings.Join(logs.lines, "\n"))
	} else {
		t.Logf("the cause in the log: %s", line)
	}
	inf, err := r.mgr.GetCache().GetInformer(ctx, &corev1.ConfigMap{}, crcache.BlockUntilSynced(false))
	if err != nil {
		t.Fatal(err)
	}
	ours, ok := inf.(interface{ WaitForSync(context.Context) error })
	if !ok {
		t.Fatalf("the Manager's informer is a %T, not kreflector's", inf)
	}
	waitCtx, waitCancel := context.WithTimeout(ctx, time.Second)
	defer waitCancel()
	if err := ours.WaitForSync(waitCtx); !apierrors.IsForbidden(err) {
		t.Fatalf("WaitForSync = %v, want a Forbidden error", err)
	}
}

// newHTTPServer starts cachetest's server serving ConfigMaps over HTTP.
func newHTTPServer(t *testing.T) *cachetest.Server {
	t.Helper()
	srv := cachetest.NewServer(cachetest.Options{})
	srv.Resource(cachetest.Type{Resource: "configmaps", Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}})
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

func TestManagerReconcilesThroughOurInformers(t *testing.T) {
	srv := newHTTPServer(t)
	checkReconcilesEverything(t, srv.RESTConfig(), "ns")
}

func TestManagerForbiddenCauseIsVisible(t *testing.T) {
	srv := newHTTPServer(t)
	srv.FailNext(cachetest.VerbList, 1<<20, cachetest.Forbidden())
	srv.FailNext(cachetest.VerbWatch, 1<<20, cachetest.Forbidden())
	checkForbiddenIsVisible(t, srv.RESTConfig(), "ns")
}
