package controllerruntime

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kreflector/cache/ring"
)

// A field index made before Start creates the ConfigMap informer early,
// so the manager waits for it to sync before starting plain runnables:
// AddRing starts the ring with the caches, and the manager comes up. The
// manager's cache hands out the ring informer itself, with HandlesKey.
func TestAddRingWithAnIndexBeforeStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	w := newElasticWorld(t, 20)
	e := NewElastic()
	r, err := ring.New(ring.Config{Client: w.cs.CoordinationV1(), Namespace: "ring", Name: "indexed", Identity: "only", Buckets: 16,
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond, Drain: e.Drain})
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := manager.New(w.cfg, manager.Options{
		Cache:      crcache.Options{NewInformer: r.NewInformer},
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := AddRing(mgr, r); err != nil {
		t.Fatal(err)
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.ConfigMap{}, "v", func(o client.Object) []string {
		return []string{o.(*corev1.ConfigMap).Data["v"]}
	}); err != nil {
		t.Fatal(err)
	}
	got := &seen{keys: map[types.NamespacedName]int{}}
	if err := builder.ControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Named("configmaps").Complete(e.Reconciler(mgr, &corev1.ConfigMap{}, got)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	mctx, stop := context.WithCancel(context.Background())
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	w.poll(ctx, "every ConfigMap reconciled", func() bool { return got.has("team", names("cm", 20)) })

	inf, err := mgr.GetCache().GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	ri, ok := inf.(interface {
		HandlesKey(string) bool
		WaitForSync(context.Context) error
	})
	if !ok {
		t.Fatalf("the manager's informer is a %T, without HandlesKey", inf)
	}
	if _, ok := inf.(*ring.Informer); !ok {
		t.Errorf("the manager's informer is a %T, not the *ring.Informer itself", inf)
	}
	if err := ri.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	if !ri.HandlesKey("team/cm-000") {
		t.Error("the ring's only member does not handle team/cm-000")
	}
	var list corev1.ConfigMapList
	if err := mgr.GetClient().List(ctx, &list, client.MatchingFields{"v": "1"}); err != nil || len(list.Items) != 20 {
		t.Fatalf("the index holds %d ConfigMaps (%v), want 20", len(list.Items), err)
	}
}
