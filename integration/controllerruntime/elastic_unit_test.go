package controllerruntime

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgocache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kreflector/cache/shard"
)

// fakeRingInformer is a ring informer whose handling is a switch.
type fakeRingInformer struct {
	handles atomic.Bool
	indexer clientgocache.Indexer
}

func (f *fakeRingInformer) Handles(interface{}) bool          { return f.handles.Load() }
func (f *fakeRingInformer) GetIndexer() clientgocache.Indexer { return f.indexer }

// serverReader is the API server as a client.Reader: a map of objects.
type serverReader map[types.NamespacedName]*corev1.ConfigMap

func (s serverReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	cm, ok := s[key]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
	}
	cm.DeepCopyInto(obj.(*corev1.ConfigMap))
	return nil
}

func (s serverReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not served")
}

// counting is an inner reconciler that counts its calls and, while gate
// is open, blocks until it is closed.
type counting struct {
	calls   atomic.Int32
	entered chan struct{}
	gate    chan struct{}
}

func (c *counting) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	c.calls.Add(1)
	if c.gate != nil {
		c.entered <- struct{}{}
		<-c.gate
	}
	return reconcile.Result{}, nil
}

// shardsOf returns a shard holding obj and one not holding it.
func shardsOf(t *testing.T, obj *corev1.ConfigMap) (in, out shard.Shard) {
	t.Helper()
	for i := range 2 {
		s, err := shard.Replica(i, 2)
		if err != nil {
			t.Fatal(err)
		}
		if ok, _ := s.Contains(obj); ok {
			in = s
		} else {
			out = s
		}
	}
	return in, out
}

// The Reconciler's decision, for a cached object, an object only the
// server has and a deleted one; and Drain waiting for exactly the
// reconciles in progress of the released shard.
func TestElasticReconcilerDecidesAndDrainWaits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	cached := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cached", UID: "u-cached"}}
	moved := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "moved", UID: "u-moved"}}
	idx := clientgocache.NewIndexer(clientgocache.MetaNamespaceKeyFunc, clientgocache.Indexers{})
	if err := idx.Add(cached); err != nil {
		t.Fatal(err)
	}
	inf := &fakeRingInformer{indexer: idx}
	server := serverReader{{Namespace: "ns", Name: "moved"}: moved, {Namespace: "ns", Name: "cached"}: cached}
	e := NewElastic()
	inner := &counting{}
	rec := &elasticReconciler{e: e, lookup: func(context.Context) (ringInformer, error) { return inf, nil }, reader: server, obj: &corev1.ConfigMap{}, inner: inner}
	req := func(name string) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}
	}
	for _, c := range []struct {
		name    string
		handles bool
		want    int32
	}{
		{"cached", true, 1}, {"cached", false, 0},
		{"moved", true, 1}, {"moved", false, 0},
		{"deleted", false, 1}, // the server has none: passed whatever the ring says
	} {
		inf.handles.Store(c.handles)
		before := inner.calls.Load()
		if _, err := rec.Reconcile(ctx, req(c.name)); err != nil {
			t.Fatal(err)
		}
		if got := inner.calls.Load() - before; got != c.want {
			t.Errorf("%s with handles=%v: inner called %d times, want %d", c.name, c.handles, got, c.want)
		}
	}

	inf.handles.Store(true)
	inner.entered, inner.gate = make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() { _, err := rec.Reconcile(ctx, req("cached")); done <- err }()
	<-inner.entered
	in, out := shardsOf(t, cached)
	if err := e.Drain(ctx, out); err != nil {
		t.Fatalf("Drain of a shard without the reconcile in progress: %v", err)
	}
	short, stop := context.WithTimeout(ctx, 100*time.Millisecond)
	err := e.Drain(short, in)
	stop()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Drain with a reconcile of the shard in progress = %v, want DeadlineExceeded", err)
	}
	drained := make(chan error, 1)
	go func() { drained <- e.Drain(ctx, in) }()
	close(inner.gate)
	if err := <-drained; err != nil {
		t.Fatalf("Drain once the reconcile returned: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
