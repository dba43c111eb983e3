package cache

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgocache "k8s.io/client-go/tools/cache"
)

// The hook controller-runtime's cache.Options.NewInformer and client-go's
// factories take must accept our constructor as it is.
var _ func(clientgocache.ListerWatcher, runtime.Object, time.Duration, clientgocache.Indexers) clientgocache.SharedIndexInformer = NewSharedIndexInformer

// syncWaiter is what our informers and registrations add to client-go's.
type syncWaiter interface {
	WaitForSync(ctx context.Context) error
}

func abcInformer() (*scriptLW, SharedIndexInformer) {
	lw := &scriptLW{noWL: true, lists: []listReply{{list: cmList("10", "", cm("a", "5"), cm("b", "6"), cm("c", "7"))}}}
	return lw, NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, Indexers{})
}

func TestInformerSlowHandlerDoesNotBlockOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw, inf := abcInformer()
		release := make(chan struct{})
		log := &handlerLog{}
		fast, _ := inf.AddEventHandler(log.handler("fast"))
		slow, _ := inf.AddEventHandler(ResourceEventHandlerFuncs{AddFunc: func(interface{}) { <-release }})
		if n := cap(slow.(*listener).backlog); n != 0 {
			t.Errorf("an idle handler's backlog has room for %d notifications before any arrived", n)
		}
		stop := runInformer(t, inf)
		defer stop()
		synctest.Wait()
		d := &informerDriver{t: t, lw: lw}
		d.send(ev(watch.Added, cm("d", "11")), ev(watch.Added, cm("e", "12")))
		if !fast.HasSynced() || slow.HasSynced() {
			t.Errorf("HasSynced: fast %v (want true), slow %v (want false)", fast.HasSynced(), slow.HasSynced())
		}
		if got := len(log.calls["fast"]); got != 5 {
			t.Errorf("fast handler got %d calls while the slow one was stuck, want 5", got)
		}
		if got := slow.(*listener).pending(); got != 4 {
			t.Errorf("slow handler's backlog is %d, want 4", got)
		}
		close(release)
		synctest.Wait()
		if !slow.HasSynced() || slow.(*listener).pending() != 0 {
			t.Errorf("slow handler not caught up after release: synced %v, backlog %d", slow.HasSynced(), slow.(*listener).pending())
		}
	})
}

func TestInformerShutDownEventHandlerWaitsForTheHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw, inf := abcInformer()
		var mu sync.Mutex
		calls := 0
		reg, _ := inf.AddEventHandler(ResourceEventHandlerFuncs{AddFunc: func(interface{}) {
			mu.Lock()
			calls++
			mu.Unlock()
			time.Sleep(time.Second)
		}})
		stop := runInformer(t, inf)
		defer stop()
		time.Sleep(1500 * time.Millisecond) // inside the second OnAdd
		if err := ShutDownEventHandler(inf, reg); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		got := calls
		mu.Unlock()
		(&informerDriver{t: t, lw: lw}).send(ev(watch.Added, cm("d", "11")))
		mu.Lock()
		defer mu.Unlock()
		if got != 2 || calls != 2 {
			t.Errorf("calls: %d when ShutDownEventHandler returned, %d later; want 2 and 2", got, calls)
		}
	})
}

func TestInformerRemoveBeforeRunClosesShutdownChan(t *testing.T) {
	_, inf := abcInformer()
	reg, _ := inf.AddEventHandler(ResourceEventHandlerFuncs{})
	if err := ShutDownEventHandler(inf, reg); err != nil {
		t.Fatal(err)
	}
	if err := inf.RemoveEventHandler(reg); err != nil {
		t.Errorf("removing twice: %v", err)
	}
}

func TestInformerErrorsAndLifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, inf := abcInformer()
		if inf.GetIndexer() == nil || inf.GetStore() == nil {
			t.Fatal("no indexer before Run")
		}
		if err := inf.SetTransform(nil); err != nil {
			t.Errorf("SetTransform(nil) before Run: %v", err)
		}
		if _, err := inf.AddEventHandler(nil); err == nil {
			t.Error("AddEventHandler(nil) succeeded")
		}
		reg, _ := inf.AddEventHandler(ResourceEventHandlerFuncs{})
		stop := runInformer(t, inf)
		synctest.Wait()
		if err := inf.SetTransform(nil); err == nil {
			t.Error("SetTransform after Run succeeded")
		}
		if err := inf.SetWatchErrorHandler(func(*clientgocache.Reflector, error) {}); err == nil {
			t.Error("SetWatchErrorHandler after Run succeeded")
		}
		_, other := abcInformer()
		foreign, _ := clientgocache.NewSharedInformer(&scriptLW{}, &corev1.ConfigMap{}, 0).AddEventHandler(ResourceEventHandlerFuncs{})
		if err := other.RemoveEventHandler(foreign); err == nil {
			t.Error("removing client-go's registration succeeded")
		}
		if err := inf.AddIndexers(Indexers{"byName": func(o interface{}) ([]string, error) { return []string{o.(*corev1.ConfigMap).Name}, nil }}); err != nil {
			t.Fatalf("AddIndexers after Run: %v", err)
		}
		if got, _ := inf.GetIndexer().ByIndex("byName", "b"); len(got) != 1 {
			t.Errorf("index added after sync holds %d objects named b, want 1", len(got))
		}
		if !reg.HasSynced() || !inf.HasSynced() || !inf.GetController().HasSynced() {
			t.Error("not synced")
		}
		stop()
		if !inf.IsStopped() {
			t.Error("IsStopped false after Run returned")
		}
		if _, err := inf.AddEventHandler(ResourceEventHandlerFuncs{}); err == nil {
			t.Error("AddEventHandler after stop succeeded")
		}
		if err := inf.AddIndexers(Indexers{"x": MetaNamespaceIndexFunc}); err == nil {
			t.Error("AddIndexers after stop succeeded")
		}
		inf.Run(make(chan struct{})) // returns at once: an informer runs once
	})
}

func TestInformerConstructorsPanicOnNilListerWatcher(t *testing.T) {
	for name, f := range map[string]func(){
		"NewSharedIndexInformer": func() { NewSharedIndexInformer(nil, &corev1.ConfigMap{}, 0, nil) },
		"NewInformer":            func() { NewInformer(nil, &corev1.ConfigMap{}, 0, ResourceEventHandlerFuncs{}) },
		"NewIndexerInformer":     func() { NewIndexerInformer(&scriptLW{}, &corev1.ConfigMap{}, 0, nil, nil) },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), name) {
					t.Errorf("%s: panic %v, want one naming the function", name, r)
				}
			}()
			f()
		}()
	}
}

func TestInformerWaitForSyncReturnsTheCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		forbidden := apierrors.NewForbidden(cmGVR, "", errors.New("no RBAC"))
		lw := &scriptLW{noWL: true}
		for range 100 {
			lw.lists = append(lw.lists, listReply{err: forbidden})
		}
		inf := NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, nil)
		var handlerGot atomic.Pointer[clientgocache.Reflector]
		if err := inf.SetWatchErrorHandler(func(r *clientgocache.Reflector, err error) { handlerGot.Store(r) }); err != nil {
			t.Fatal(err)
		}
		reg, _ := inf.AddEventHandler(ResourceEventHandlerFuncs{})
		stop := runInformer(t, inf)
		defer stop()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		for name, w := range map[string]syncWaiter{"informer": inf.(syncWaiter), "registration": reg.(syncWaiter)} {
			err := w.WaitForSync(ctx)
			if !apierrors.IsForbidden(err) || !errors.Is(err, ErrNotSynced) || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s: WaitForSync = %v, want Forbidden, ErrNotSynced and the deadline", name, err)
			}
		}
		for _, c := range []DoneChecker{inf.HasSyncedChecker(), reg.HasSyncedChecker()} {
			if n := c.Name(); !strings.Contains(n, "no RBAC") || !strings.Contains(n, "SharedIndexInformer *v1.ConfigMap") {
				t.Errorf("HasSyncedChecker().Name() = %q, want the informer and the cause in it", n)
			}
		}
		if r := handlerGot.Load(); r == nil || r.Name() == "" {
			t.Errorf("watch error handler got Reflector %v", r)
		}
	})
}

func TestInformerHandlerPanicIsLoggedWithItsName(t *testing.T) {
	defer func(old bool) { utilruntime.ReallyCrash = old }(utilruntime.ReallyCrash)
	utilruntime.ReallyCrash = false
	synctest.Test(t, func(t *testing.T) {
		_, inf := abcInformer()
		var mu sync.Mutex
		var logged strings.Builder
		logger := funcr.New(func(prefix, args string) {
			mu.Lock()
			defer mu.Unlock()
			logged.WriteString(args + "\n")
		}, funcr.Options{})
		var seen []string
		h := ResourceEventHandlerFuncs{AddFunc: func(obj interface{}) {
			name := obj.(*corev1.ConfigMap).Name
			if name == "a" {
				panic("handler bug")
			}
			seen = append(seen, name)
		}}
		reg, _ := inf.AddEventHandlerWithOptions(h, HandlerOptions{Logger: &logger})
		stop := runInformer(t, inf)
		defer stop()
		time.Sleep(pauseAfterPanic) // b waits that long after a's panic
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if strings.Join(seen, ",") != "b,c" {
			t.Errorf("after the panic the handler saw %v, want b,c", seen)
		}
		if !strings.Contains(logged.String(), "handler bug") || !strings.Contains(logged.String(), reg.(*listener).name) {
			t.Errorf("panic log %q lacks the panic or the handler's name %q", logged.String(), reg.(*listener).name)
		}
	})
}

// The queue files objects by name only (batchKey): objects of one name in
// two namespaces, in one burst, must both arrive, in order.
func TestInformerSameNameInTwoNamespaces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &scriptLW{noWL: true, lists: []listReply{{list: cmList("10", "")}}}
		inf := NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, nil)
		var mu sync.Mutex
		var seen []string
		inf.AddEventHandler(ResourceEventHandlerFuncs{AddFunc: func(obj interface{}) {
			mu.Lock()
			defer mu.Unlock()
			c := obj.(*corev1.ConfigMap)
			seen = append(seen, c.Namespace+"/"+c.Name)
		}, UpdateFunc: func(_, obj interface{}) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, "update "+obj.(*corev1.ConfigMap).Namespace)
		}})
		stop := runInformer(t, inf)
		defer stop()
		synctest.Wait()
		other := cm("a", "12")
		other.Namespace = "other"
		again := cm("a", "13")
		(&informerDriver{t: t, lw: lw}).send(ev(watch.Added, cm("a", "11")), ev(watch.Added, other), ev(watch.Modified, again))
		mu.Lock()
		defer mu.Unlock()
		if got := strings.Join(seen, ","); got != "ns/a,other/a,update ns" {
			t.Errorf("handler saw %s", got)
		}
		if keys := inf.GetStore().ListKeys(); len(keys) != 2 {
			t.Errorf("store keys %v", keys)
		}
	})
}
