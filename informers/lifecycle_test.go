package informers_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache/informers"
)

// countUpdates counts the updates (resyncs, here) inf delivers.
func countUpdates(t *testing.T, inf clientgocache.SharedIndexInformer) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	if _, err := inf.AddEventHandler(clientgocache.ResourceEventHandlerFuncs{UpdateFunc: func(_, _ any) { n.Add(1) }}); err != nil {
		t.Fatal(err)
	}
	return &n
}

// The default resync period and WithCustomResyncConfig's reach the
// informers: on synctest's clock, ConfigMaps (custom: one minute) resync
// within two minutes, Secrets (default: an hour) do not.
func TestResyncPeriods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs := fake.NewClientset(configMap("a", "x"), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "s"}})
		f := informers.NewSharedInformerFactoryWithOptions(cs, time.Hour,
			informers.WithCustomResyncConfig(map[metav1.Object]time.Duration{&corev1.ConfigMap{}: time.Minute}))
		cms := countUpdates(t, f.Core().V1().ConfigMaps().Informer())
		secrets := countUpdates(t, f.Core().V1().Secrets().Informer())
		ctx, cancel := context.WithCancel(t.Context())
		f.StartWithContext(ctx)
		if err := f.WaitForSync(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Minute) // synctest's clock
		synctest.Wait()
		if cms.Load() == 0 || secrets.Load() != 0 {
			t.Errorf("after 2m: %d ConfigMap resyncs (want some), %d Secret resyncs (want none)", cms.Load(), secrets.Load())
		}
		cancel()
		f.Shutdown()
	})
}

// Shutdown blocks until every informer's goroutines have returned; the
// bubble then ends with none left (synctest fails the test otherwise).
func TestShutdownWaitsForInformers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := informers.NewSharedInformerFactory(fake.NewClientset(configMap("a", "x")), 0)
		f.Core().V1().ConfigMaps().Informer()
		f.Apps().V1().Deployments().Informer()
		stop := make(chan struct{})
		f.Start(stop)
		for typ, ok := range f.WaitForCacheSync(t.Context().Done()) {
			if !ok {
				t.Fatalf("%v did not sync", typ)
			}
		}
		done := make(chan struct{})
		go func() {
			f.Shutdown()
			close(done)
		}()
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("Shutdown returned while the informers were running")
		default:
		}
		close(stop)
		<-done
		f.Core().V1().Pods().Informer()
		f.Start(make(chan struct{})) // after Shutdown: starts nothing
		synctest.Wait()
	})
}
