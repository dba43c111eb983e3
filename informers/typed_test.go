package informers_test

import (
	"context"
	"k8s.io/apimachinery/pkg/util/wait"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1alpha2 "k8s.io/api/coordination/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clientgoinformers "k8s.io/client-go/informers"
	clientgocorev1 "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
	ourapps "github.com/kreflector/cache/informers/apps/v1"
	ourcoordination "github.com/kreflector/cache/informers/coordination/v1alpha2"
	ourcore "github.com/kreflector/cache/informers/core"
	ourcorev1 "github.com/kreflector/cache/informers/core/v1"
	"github.com/kreflector/cache/informers/internalinterfaces"
	ourrbac "github.com/kreflector/cache/informers/rbac/v1"
)

// meta is an object's metadata: in namespace ns ("" for cluster-scoped),
// with label app=<app> unless app is "".
func meta(ns, name, app string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Namespace: ns, Name: name}
	if app != "" {
		m.Labels = map[string]string{"app": app}
	}
	return m
}

// typedFixture is a fake clientset with two objects of each kind the
// tests build informers for: namespaced ones in "a" and "b", one of each
// labelled app=web.
func typedFixture() *fake.Clientset {
	return fake.NewClientset(
		&corev1.Pod{ObjectMeta: meta("a", "web", "web")},
		&corev1.Pod{ObjectMeta: meta("b", "db", "db")},
		&appsv1.Deployment{ObjectMeta: meta("a", "web", "web")},
		&appsv1.Deployment{ObjectMeta: meta("b", "db", "db")},
		&rbacv1.ClusterRole{ObjectMeta: meta("", "web", "web")},
		&rbacv1.ClusterRole{ObjectMeta: meta("", "db", "")},
		&coordinationv1alpha2.LeaseCandidate{ObjectMeta: meta("a", "web", "web")},
		&coordinationv1alpha2.LeaseCandidate{ObjectMeta: meta("b", "db", "db")},
	)
}

// webOnly is a tweak that selects app=web and counts its calls.
func webOnly(calls *atomic.Int32) internalinterfaces.TweakListOptionsFunc {
	return func(o *metav1.ListOptions) {
		calls.Add(1)
		o.LabelSelector = "app=web"
	}
}

// syncedKeys runs inf until the test ends, waits for it with our health
// API (failing t if inf is not this module's) and returns its store's
// keys, sorted.
func syncedKeys(t *testing.T, inf clientgocache.SharedIndexInformer) []string {
	t.Helper()
	reporter, ok := inf.(cache.InformerHealthReporter)
	if !ok {
		t.Fatalf("the informer is %T, not this module's", inf)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	bounded, stop := context.WithTimeout(ctx, waitLimit)
	defer stop()
	if err := reporter.WaitForSync(bounded); err != nil {
		t.Fatal(err)
	}
	keys := inf.GetStore().ListKeys()
	slices.Sort(keys)
	return keys
}

// The generated constructors, called as code written for client-go's
// packages calls them, build this module's informers over the clientset
// with client-go's semantics: the namespace (none for a cluster-scoped
// resource), the indexers, the tweak on every LIST and WATCH. One
// namespaced and one cluster-scoped resource, a typed variant and an
// alpha version cover the shapes the generator writes.
func TestGeneratedConstructorsBuildOurs(t *testing.T) {
	nsIndex := clientgocache.Indexers{clientgocache.NamespaceIndex: clientgocache.MetaNamespaceIndexFunc}
	cases := []struct {
		name  string
		build func(*fake.Clientset, internalinterfaces.TweakListOptionsFunc) clientgocache.SharedIndexInformer
		tweak bool
		want  []string
	}{
		{"core/v1 NewPodInformer", func(c *fake.Clientset, _ internalinterfaces.TweakListOptionsFunc) clientgocache.SharedIndexInformer {
			return ourcorev1.NewPodInformer(c, "a", 0, nsIndex)
		}, false, []string{"a/web"}},
		{"core/v1 NewFilteredPodInformer", func(c *fake.Clientset, tw internalinterfaces.TweakListOptionsFunc) clientgocache.SharedIndexInformer {
			return ourcorev1.NewFilteredPodInformer(c, metav1.NamespaceAll, 0, nsIndex, tw)
		}, true, []string{"a/web"}},
		{"apps/v1 NewDeploymentInformer", func(c *fake.Clientset, _ internalinterfaces.TweakListOptionsFunc) clientgocache.SharedIndexInformer {
			return ourapps.NewDeploymentInformer(c, metav1.NamespaceAll, 0, nil)
		}, false, []string{"a/web", "b/db"}},
		{"apps/v1 NewTypedFilteredDeploymentInformer", func(c *fake.Clientset, tw internalinterfaces.TweakListOptionsFunc) clientgocache.SharedIndexInformer {
			return ourapps.NewTypedFilteredDeploymentInformer(c, "b", 0, nil, tw)
		}, true, nil},
		{"rbac/v1 NewClusterRoleInformer", func(c *fake.Clientset, _ internalinterfaces.TweakListOptionsFunc) clientgocache.SharedIndexInformer {
			return ourrbac.NewClusterRoleInformer(c, 0, nil)
		}, false, []string{"db", "web"}},
		{"rbac/v1 NewFilteredClusterRoleInformer", func(c *fake.Clientset, tw internalinterfaces.TweakListOptionsFunc) clientgocache.SharedIndexInformer {
			return ourrbac.NewFilteredClusterRoleInformer(c, 0, nil, tw)
		}, true, []string{"web"}},
		{"coordination/v1alpha2 NewFilteredLeaseCandidateInformer", func(c *fake.Clientset, tw internalinterfaces.TweakListOptionsFunc) clientgocache.SharedIndexInformer {
			return ourcoordination.NewFilteredLeaseCandidateInformer(c, "a", 0, nsIndex, tw)
		}, true, []string{"a/web"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			inf := tc.build(typedFixture(), webOnly(&calls))
			if got := syncedKeys(t, inf); !slices.Equal(got, tc.want) {
				t.Errorf("store keys %q, want %q", got, tc.want)
			}
			// The WATCH follows the sync: wait for it (bounded).
			err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, waitLimit, true, func(context.Context) (bool, error) {
				return !tc.tweak || calls.Load() >= 2, nil
			})
			if err != nil {
				t.Errorf("the tweak ran %d times, want one LIST and one WATCH at least", calls.Load())
			}
			if !tc.tweak && calls.Load() != 0 {
				t.Errorf("a tweak not given ran %d times", calls.Load())
			}
		})
	}
}

// The generated packages work on client-go's own factory too (its
// InformerFor and Start): New of our version and group packages hands out
// our informers wherever the factory comes from, and client-go's
// accessor then serves the informer ours registered.
func TestGeneratedPackagesOnClientGoFactory(t *testing.T) {
	f := clientgoinformers.NewSharedInformerFactory(typedFixture(), 0)
	var calls atomic.Int32
	var pods clientgocorev1.TypedPodInformer = ourcorev1.New(f, "a", webOnly(&calls)).Pods()
	inf := pods.Informer()
	reporter, ok := inf.(cache.InformerHealthReporter)
	if !ok {
		t.Fatalf("the informer is %T, not this module's", inf)
	}
	if other := ourcore.New(f, "a", nil).V1().Pods().Informer(); other != inf {
		t.Errorf("our group package's accessor gave another informer (%T)", other)
	}
	if registered := f.InformerFor(&corev1.Pod{}, nil); registered != inf {
		t.Errorf("client-go's factory holds %T for Pods, not ours", registered)
	}
	stop := make(chan struct{})
	t.Cleanup(func() {
		close(stop)
		f.Shutdown()
	})
	f.Start(stop)
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	if err := reporter.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.Core().V1().Pods().Informer().GetIndexer(); got != inf.GetIndexer() {
		t.Error("client-go's accessor serves another indexer than our informer's")
	}
	list, err := pods.Lister().List(labels.Everything())
	if err != nil || len(list) != 1 || list[0].Name != "web" {
		t.Errorf("client-go's lister over our informer: %v, %v", list, err)
	}
	if calls.Load() == 0 {
		t.Error("the tweak given to New did not run")
	}
}

// The conversions keep our informers' health methods, and pass on
// informers that are already typed.
func TestGeneratedConversionsKeepHealth(t *testing.T) {
	inf := ourcorev1.NewPodInformer(typedFixture(), "a", 0, nil)
	ix := ourcorev1.ToPodIndexInformer(inf)
	if _, ok := ix.(cache.InformerHealthReporter); !ok {
		t.Errorf("ToPodIndexInformer(ours) is %T, which does not report health", ix)
	}
	if again := ourcorev1.ToPodIndexInformer(ix); again != ix {
		t.Errorf("ToPodIndexInformer of a PodIndexInformer wrapped it again (%T)", again)
	}
	typed := ourcorev1.ToTypedPodInformer(untypedPods{inf})
	if _, ok := typed.TypedInformer().(cache.InformerHealthReporter); !ok {
		t.Errorf("ToTypedPodInformer(...).TypedInformer() is %T, which does not report health", typed.TypedInformer())
	}
	if typed.Informer() != inf {
		t.Errorf("ToTypedPodInformer(...).Informer() is not the informer given")
	}
	accessor := ourcorev1.New(clientgoinformers.NewSharedInformerFactory(typedFixture(), 0), "", nil).Pods()
	if got := ourcorev1.ToTypedPodInformer(accessor); got != accessor {
		t.Errorf("ToTypedPodInformer of a TypedPodInformer wrapped it (%T)", got)
	}
}

// untypedPods is a PodInformer that is not typed.
type untypedPods struct {
	inf clientgocache.SharedIndexInformer
}

func (p untypedPods) Informer() clientgocache.SharedIndexInformer { return p.inf }
func (p untypedPods) Lister() listerscorev1.PodLister {
	return listerscorev1.NewPodLister(p.inf.GetIndexer())
}
