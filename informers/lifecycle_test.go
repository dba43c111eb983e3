package informers_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
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

// Once the factory's informers have stopped, WaitForSync does not wait
// for its context: a wait in progress returns when they stop, and one
// called after returns at once, naming each informer that stopped unsynced
// (ErrStopped, with why it had not synced); Health says Stopped for each.
func TestWaitForSyncReturnsOnceStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs := fake.NewClientset(configMap("a", "x"))
		cs.PrependReactor("list", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", errors.New("no"))
		})
		f := informers.NewSharedInformerFactory(cs, 0)
		f.Core().V1().Secrets().Informer()
		f.Core().V1().ConfigMaps().Informer()
		stop := make(chan struct{})
		f.Start(stop)
		waitFor := func() <-chan error {
			ch := make(chan error, 1)
			go func() { ch <- f.WaitForSync(t.Context()) }()
			return ch
		}
		waiting := waitFor()
		time.Sleep(20 * time.Second)
		synctest.Wait()
		select {
		case err := <-waiting:
			t.Fatalf("WaitForSync returned while the Secrets could not sync: %v", err)
		default:
		}
		close(stop)
		f.Shutdown()
		stopped := time.Now()
		synctest.Wait()
		after := waitFor()
		synctest.Wait()
		for what, ch := range map[string]<-chan error{"waiting": waiting, "called after the stop": after} {
			select {
			case err := <-ch:
				if !errors.Is(err, cache.ErrNotSynced) || !errors.Is(err, cache.ErrStopped) || !apierrors.IsForbidden(err) ||
					!strings.Contains(err.Error(), "*v1.Secret") || strings.Contains(err.Error(), "ConfigMap") {
					t.Fatalf("WaitForSync, %s = %v; want the Secrets' informer named, stopped and forbidden, and nothing of the ConfigMaps'", what, err)
				}
			default:
				t.Fatalf("WaitForSync, %s, still waits after Shutdown", what)
			}
		}
		if !time.Now().Equal(stopped) {
			t.Fatalf("the waits took %v", time.Since(stopped))
		}
		health := f.Health()
		secrets, cms := health[reflect.TypeFor[*corev1.Secret]()].Reflector, health[reflect.TypeFor[*corev1.ConfigMap]()].Reflector
		if secrets.State != cache.Stopped || secrets.HasSynced || cms.State != cache.Stopped || !cms.HasSynced {
			t.Fatalf("health after Shutdown: Secrets %v, ConfigMaps %v; want both Stopped, the ConfigMaps synced", secrets, cms)
		}
	})
}
