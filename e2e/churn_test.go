//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// createSecrets creates Secrets with the given names in ns, 16 at a time,
// and returns the first error.
func createSecrets(ctx context.Context, cs kubernetes.Interface, ns string, names []string) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(names))
	sem := make(chan struct{}, 16)
	for _, name := range names {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{"v": []byte("initial")}}
			if _, err := cs.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
				errs <- fmt.Errorf("creating %s/%s: %w", ns, name, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// churnNames are the names of the Secrets worker w of a churn starts
// with: churn-<w>-0 … churn-<w>-<n-1>.
func churnNames(w, n int) []string {
	out := make([]string, n)
	for k := range out {
		out[k] = fmt.Sprintf("churn-%d-%d", w, k)
	}
	return out
}

// churn creates, updates and deletes Secrets in ns from several workers
// at a paced rate for a fixed time. Worker w only touches names
// churn-<w>-*, so no two calls race on one object, and never reuses a
// name, so a key names one object for the whole test.
type churn struct {
	cs   kubernetes.Interface
	ns   string
	n    notifier
	done chan struct{}

	ops, creates atomic.Uint64

	mu      sync.Mutex
	err     error
	elapsed time.Duration
}

// startChurn starts workers, worker w starting with the objects
// churnNames(w, existing), and paces their calls to rate a second for d;
// c.done is closed when every call has returned.
func startChurn(ctx context.Context, cs kubernetes.Interface, ns string, workers, existing int, rate float64, d time.Duration, seed uint64) *churn {
	c := &churn{cs: cs, ns: ns, done: make(chan struct{})}
	tokens := make(chan struct{})
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		// The pace: one call allowed per tick, for d. A slow server
		// lowers the rate; the test checks the rate reached.
		defer close(tokens)
		tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
		defer tick.Stop()
		for time.Since(start) < d {
			select {
			case <-tick.C:
			case <-ctx.Done():
				return
			}
			select {
			case tokens <- struct{}{}:
			case <-ctx.Done():
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			if err := c.work(ctx, w, existing, tokens, rand.New(rand.NewPCG(seed, uint64(w)))); err != nil {
				c.mu.Lock()
				if c.err == nil {
					c.err = err
				}
				c.mu.Unlock()
				cancel()
			}
		})
	}
	go func() {
		wg.Wait()
		cancel()
		c.mu.Lock()
		c.elapsed = time.Since(start)
		c.mu.Unlock()
		close(c.done)
		c.n.notify()
	}()
	return c
}

// work makes one call per token: a create, an update or a delete, a third
// each (a create when the worker has no object left).
func (c *churn) work(ctx context.Context, w, existing int, tokens <-chan struct{}, rng *rand.Rand) error {
	live := churnNames(w, existing)
	next := existing
	api := c.cs.CoreV1().Secrets(c.ns)
	for range tokens {
		step := c.ops.Load()
		var err error
		switch op := rng.IntN(3); {
		case op == 0 || len(live) == 0:
			name := fmt.Sprintf("churn-%d-%d", w, next)
			next++
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{"v": []byte("created")}}
			if _, err = api.Create(ctx, s, metav1.CreateOptions{}); err == nil {
				live = append(live, name)
				c.creates.Add(1)
			}
		case op == 1:
			// An unconditional update: no resourceVersion to match.
			name := live[rng.IntN(len(live))]
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{"v": []byte(strconv.FormatUint(step, 10))}}
			_, err = api.Update(ctx, s, metav1.UpdateOptions{})
		default:
			i := rng.IntN(len(live))
			if err = api.Delete(ctx, live[i], metav1.DeleteOptions{}); err == nil {
				live[i] = live[len(live)-1]
				live = live[:len(live)-1]
			}
		}
		if err != nil {
			return fmt.Errorf("churn worker %d, call %d: %w", w, step, err)
		}
		c.ops.Add(1)
		c.n.notify()
	}
	return nil
}

// waitOps blocks until the churn has made n calls; it fails t if the churn
// ends or failed first, or a minute passes.
func (c *churn) waitOps(t *testing.T, n uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), minute)
	defer cancel()
	err := c.n.waitUntil(ctx, func() bool {
		select {
		case <-c.done:
			return true
		default:
		}
		return c.ops.Load() >= n
	})
	if got := c.ops.Load(); err != nil || got < n {
		t.Fatalf("churn at %d calls, want %d: %v (churn error: %v)", got, n, err, c.result())
	}
}

// result is the churn's error, if it failed.
func (c *churn) result() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// wait waits for the churn to end and returns its length and error.
func (c *churn) wait(t *testing.T) time.Duration {
	t.Helper()
	select {
	case <-c.done:
	case <-t.Context().Done():
		t.Fatal("test ended before the churn")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		t.Fatal(c.err)
	}
	return c.elapsed
}
