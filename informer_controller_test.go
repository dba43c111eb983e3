package cache

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgocache "k8s.io/client-go/tools/cache"
)

// indexerInformerConstructor is NewTransformingIndexerInformer, client-go's or ours.
type indexerInformerConstructor func(lw clientgocache.ListerWatcher, obj runtime.Object, resync time.Duration, h ResourceEventHandler, indexers Indexers, transform clientgocache.TransformFunc) (Indexer, Controller)

// playController runs sc's first handler through the Controller of a
// NewTransformingIndexerInformer and returns its calls in canonical order,
// then whether the controller had synced and the objects it stored.
func playController(t *testing.T, sc informerScenario, newInformer indexerInformerConstructor) []string {
	var out []string
	synctest.Test(t, func(t *testing.T) {
		lw := &scriptLW{lists: slices.Clone(sc.lists), noWL: !sc.watchList}
		log := &handlerLog{}
		name := sc.handlers[0]
		var transform clientgocache.TransformFunc
		if sc.transform {
			transform = markTransformed
		}
		resync := sc.defaultResync
		if p := sc.resyncs[name]; p != nil {
			resync = *p
		}
		indexer, ctrl := newInformer(lw, &corev1.ConfigMap{}, resync, log.handler(name), Indexers{NamespaceIndex: MetaNamespaceIndexFunc}, transform)
		d := &informerDriver{t: t, lw: lw, log: log}
		_, stop := startRun(t, ctrl.RunWithContext)
		synctest.Wait()
		sc.steps(d)
		keys := indexer.ListKeys()
		slices.Sort(keys)
		out = append(log.canonical(name), "synced="+boolString(ctrl.HasSynced()), "keys="+strings.Join(keys, ","), "rv="+ctrl.LastSyncResourceVersion())
		stop()
	})
	return out
}

func clientGoIndexerInformer(lw clientgocache.ListerWatcher, obj runtime.Object, resync time.Duration, h ResourceEventHandler, indexers Indexers, transform clientgocache.TransformFunc) (Indexer, Controller) {
	return clientgocache.NewTransformingIndexerInformer(lw, obj, resync, h, indexers, transform)
}

// TestControllerDifferentialWithClientGo runs the informer scenarios that
// need no late handler through client-go's NewTransformingIndexerInformer
// and ours, comparing the handler's calls, HasSynced, the stored keys and
// LastSyncResourceVersion.
func TestControllerDifferentialWithClientGo(t *testing.T) {
	for _, sc := range informerScenarios() {
		if sc.sharedOnly {
			continue
		}
		t.Run(sc.name, func(t *testing.T) {
			want := playController(t, sc, clientGoIndexerInformer)
			got := playController(t, sc, NewTransformingIndexerInformer)
			t.Logf("ours:\n  %s", strings.Join(got, "\n  "))
			if !slices.Equal(got, want) {
				t.Errorf("calls differ\nclient-go:\n  %s\nours:\n  %s", strings.Join(want, "\n  "), strings.Join(got, "\n  "))
			}
		})
	}
}

// A Config in client-go's older style (DeltaFIFO, plain Process,
// client-go's DefaultWatchErrorHandler, which dereferences the Reflector
// it is given) runs on our Reflector: the failed LIST reaches the handler
// with a usable Reflector and the deltas reach Process.
func TestNewRunsAClientGoStyleConfig(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &scriptLW{noWL: true, lists: []listReply{
			{err: errors.New("first list fails")},
			{list: cmList("10", "", cm("a", "5"))},
		}}
		store := clientgocache.NewStore(clientgocache.MetaNamespaceKeyFunc)
		fifo := clientgocache.NewDeltaFIFOWithOptions(clientgocache.DeltaFIFOOptions{KnownObjects: store, EmitDeltaTypeReplaced: true})
		var mu sync.Mutex
		var popped []string
		var handled atomic.Int32
		ctrl := New(&Config{
			Queue:         fifo,
			ListerWatcher: lw,
			ObjectType:    &corev1.ConfigMap{},
			Process: func(obj interface{}, initial bool) error {
				mu.Lock()
				defer mu.Unlock()
				for _, d := range obj.(Deltas) {
					popped = append(popped, string(d.Type)+" "+describe(d.Object))
					_ = store.Add(d.Object)
				}
				return nil
			},
			WatchErrorHandler: func(r *clientgocache.Reflector, err error) {
				handled.Add(1)
				clientgocache.DefaultWatchErrorHandler(context.Background(), r, err)
			},
		})
		if ctrl.LastSyncResourceVersion() != "" {
			t.Error("LastSyncResourceVersion set before Run")
		}
		_, stop := startRun(t, func(ctx context.Context) { ctrl.Run(ctx.Done()) })
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if !ctrl.HasSynced() || ctrl.LastSyncResourceVersion() != "10" || handled.Load() != 1 {
			t.Errorf("synced %v, rv %q, errors handled %d; want true, 10, 1", ctrl.HasSynced(), ctrl.LastSyncResourceVersion(), handled.Load())
		}
		stop()
		mu.Lock()
		defer mu.Unlock()
		if strings.Join(popped, ";") != "Replaced a@5" {
			t.Errorf("popped %q", popped)
		}
	})
}
