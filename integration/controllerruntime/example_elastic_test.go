package controllerruntime_test

import (
	"context"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	elastic "github.com/kreflector/cache/integration/controllerruntime"
	"github.com/kreflector/cache/ring"
)

// A controller-runtime Manager on an elastic ring, run on every replica:
// the cache's informers follow the ring, the reconciler drops requests
// for objects released since they were queued, and releases wait for the
// reconciles in progress. docs/sharding.md quotes the lines between the
// markers (TestSnippetInDocs holds it to them).
func Example_elasticRing() {
	var cfg *rest.Config           // the cluster
	var inner reconcile.Reconciler // the controller's own reconciler
	run := func(ctx context.Context) error {
		// snippet start
		e := elastic.NewElastic()
		r, err := ring.New(ring.Config{Client: kubernetes.NewForConfigOrDie(cfg).CoordinationV1(), Namespace: "my-system", Name: "my-controller", Drain: e.Drain})
		if err != nil {
			return err
		}
		mgr, err := manager.New(cfg, manager.Options{Cache: crcache.Options{NewInformer: r.NewInformer}})
		if err != nil {
			return err
		}
		if err := elastic.AddRing(mgr, r); err != nil { // on every replica, started with the caches
			return err
		}
		err = builder.ControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Complete(e.Reconciler(mgr, &corev1.ConfigMap{}, inner))
		// snippet end
		if err != nil {
			return err
		}
		return mgr.Start(ctx)
	}
	_ = run
}

// factoryLine is docs/sharding.md's factory snippet, which
// informers/ring_test.go runs.
const factoryLine = "f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNewInformer(r.NewInformer))"

// docs/sharding.md's controller-runtime snippet is the example's, line
// for line, and its factory line is the one informers/ring_test.go runs.
func TestSnippetInDocs(t *testing.T) {
	doc, err := os.ReadFile("../../docs/sharding.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_elastic_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(src), "// snippet start\n")
	snippet, _, _ := strings.Cut(rest, "\t\t// snippet end")
	var want []string
	for _, line := range strings.Split(strings.TrimSpace(snippet), "\n") {
		want = append(want, strings.TrimPrefix(line, "\t\t"))
	}
	if !strings.Contains(string(doc), strings.Join(want, "\n")) {
		t.Errorf("docs/sharding.md does not quote the snippet of Example_elasticRing; want:\n%s", strings.Join(want, "\n"))
	}
	factoryTest, err := os.ReadFile("../../informers/ring_test.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), factoryLine) || !strings.Contains(string(factoryTest), factoryLine) {
		t.Errorf("docs/sharding.md and informers/ring_test.go should both hold %q", factoryLine)
	}
}
