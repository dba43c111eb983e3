//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/kreflector/cache"
)

// minute bounds each wait for the server or the Reflector in these tests.
const minute = time.Minute

// namespace creates a namespace for t. Nothing runs the namespace
// controller, so deleting it when t ends only marks it Terminating; each
// test's objects stay apart by namespace anyway.
func namespace(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	name := strings.ToLower(fmt.Sprintf("e2e-%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), rand.IntN(1e6)))
	name = strings.NewReplacer("_", "-", "=", "-", ",", "-").Replace(name)
	if len(name) > 63 {
		name = name[len(name)-63:]
	}
	name = strings.TrimLeft(name, "-")
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Namespaces().Delete(context.WithoutCancel(t.Context()), name, metav1.DeleteOptions{})
	})
	return name
}

// createConfigMaps creates n ConfigMaps cm-0 … cm-(n-1) in ns, 16 at a
// time, and returns the first error.
func createConfigMaps(ctx context.Context, cs kubernetes.Interface, ns string, n int) error {
	return inParallel(n, 16, func(i int) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-" + strconv.Itoa(i)}, Data: map[string]string{"i": strconv.Itoa(i)}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating %s/%s: %w", ns, cm.Name, err)
		}
		return nil
	})
}

// inParallel runs f(0) … f(n-1), at most width at once, every one of them
// even after an error, and returns the first error.
func inParallel(n, width int, f func(i int) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, width)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := f(i); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// mustCreateConfigMaps is createConfigMaps failing t on error.
func mustCreateConfigMaps(t *testing.T, cs kubernetes.Interface, ns string, n int) {
	t.Helper()
	if err := createConfigMaps(t.Context(), cs, ns, n); err != nil {
		t.Fatal(err)
	}
}

// workload runs steps random creates, updates and deletes of ConfigMaps
// cm-* in ns (existing of them exist), seeded by seed, then writes the
// ConfigMap "workload-done" and returns its resourceVersion: a watch of ns
// that has delivered it has delivered every change before it.
func workload(t *testing.T, cs kubernetes.Interface, ns string, existing, steps int, seed uint64) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, uint64(existing)))
	api := cs.CoreV1().ConfigMaps(ns)
	for step := range steps {
		name := "cm-" + strconv.Itoa(rng.IntN(existing+steps/4))
		cm, err := api.Get(t.Context(), name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"step": strconv.Itoa(step)}}
			_, err = api.Create(t.Context(), cm, metav1.CreateOptions{})
		case err == nil && rng.IntN(3) == 0:
			err = api.Delete(t.Context(), name, metav1.DeleteOptions{})
		case err == nil:
			cm.Data = map[string]string{"step": strconv.Itoa(step)}
			_, err = api.Update(t.Context(), cm, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Fatalf("step %d on %s/%s: %v", step, ns, name, err)
		}
	}
	return markDone(t, cs, ns, fmt.Sprintf("%d steps, seed %d", steps, seed))
}

// markDone creates or updates the ConfigMap "workload-done" in ns with
// note and returns its resourceVersion.
func markDone(t *testing.T, cs kubernetes.Interface, ns, note string) string {
	t.Helper()
	api := cs.CoreV1().ConfigMaps(ns)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "workload-done"}, Data: map[string]string{"note": note}}
	out, err := api.Create(t.Context(), cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		var cur *corev1.ConfigMap
		if cur, err = api.Get(t.Context(), cm.Name, metav1.GetOptions{}); err == nil {
			cur.Data = cm.Data
			out, err = api.Update(t.Context(), cur, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		t.Fatalf("writing %s/workload-done: %v", ns, err)
	}
	return out.ResourceVersion
}

// configMapsLW is a ListerWatcher of the ConfigMaps in ns.
func configMapsLW(cs *kubernetes.Clientset, ns string) *cache.ListWatch {
	return cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", ns, fields.Everything())
}

// runReflector runs r until t ends, and waits for it to return then.
func runReflector(t *testing.T, r *cache.Reflector) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan struct{})
	go func() { r.RunWithContext(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// mustSync fails t unless r syncs within a minute.
func mustSync(t *testing.T, r *cache.Reflector) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), minute)
	defer cancel()
	if err := r.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
}

// healthLog records every Health a Reflector reports (its OnHealthChange).
type healthLog struct {
	n  notifier
	mu sync.Mutex
	hs []cache.Health
}

// record is the OnHealthChange callback; it returns at once.
func (l *healthLog) record(h cache.Health) {
	l.mu.Lock()
	l.hs = append(l.hs, h)
	l.mu.Unlock()
	l.n.notify()
}

// mark is the position of the next Health to be recorded.
func (l *healthLog) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.hs)
}

// waitFor returns the first Health recorded at or after position from
// that satisfies ok, waiting for it until ctx ends.
func (l *healthLog) waitFor(ctx context.Context, from int, ok func(cache.Health) bool) (cache.Health, error) {
	var found cache.Health
	err := l.n.waitUntil(ctx, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, h := range l.hs[min(from, len(l.hs)):] {
			if ok(h) {
				found = h
				return true
			}
		}
		return false
	})
	return found, err
}
