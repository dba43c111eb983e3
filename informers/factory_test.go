package informers_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/informers/internalinterfaces"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/informers"
)

// Our factory is accepted where client-go's is expected.
var (
	_ clientgoinformers.SharedInformerFactory  = informers.NewSharedInformerFactory(nil, 0)
	_ internalinterfaces.SharedInformerFactory = informers.NewSharedInformerFactory(nil, 0)
)

const waitLimit = 30 * time.Second

func configMap(ns, name string, lbls ...string) *corev1.ConfigMap {
	c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{}}}
	for i := 0; i+1 < len(lbls); i += 2 {
		c.Labels[lbls[i]] = lbls[i+1]
	}
	return c
}

// start starts f until the test ends, then stops it and waits for it.
func start(t *testing.T, f informers.SharedInformerFactory) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(func() {
		cancel()
		f.Shutdown()
	})
	f.StartWithContext(ctx)
	bounded, stop := context.WithTimeout(ctx, waitLimit)
	t.Cleanup(stop)
	if err := f.WaitForSync(bounded); err != nil {
		t.Fatal(err)
	}
	return bounded
}

// poll checks cond every millisecond until it holds, failing t if ctx
// ends first (for state that offers no notification).
func poll(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-tick.C:
		}
	}
}

func names(cms []*corev1.ConfigMap) []string {
	var out []string
	for _, c := range cms {
		out = append(out, c.Namespace+"/"+c.Name)
	}
	slices.Sort(out)
	return out
}

// Namespace and TweakListOptions reach the LIST and the WATCH; the
// cache holds only what they select; the informer reports health.
func TestNamespaceAndTweakListOptions(t *testing.T) {
	cs := fake.NewClientset(configMap("a", "keep", "app", "x"), configMap("a", "drop", "app", "y"), configMap("b", "other", "app", "x"))
	var sawList, sawWatch atomic.Bool
	tweak := func(o *metav1.ListOptions) {
		o.LabelSelector = "app=x"
		if o.AllowWatchBookmarks { // the Reflector asks WATCHes for bookmarks
			sawWatch.Store(true)
		} else {
			sawList.Store(true)
		}
	}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("a"), informers.WithTweakListOptions(tweak))
	cms := f.Core().V1().ConfigMaps()
	inf := cms.Informer()
	ctx := start(t, f)
	got, err := cms.Lister().List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a/keep"}; !slices.Equal(names(got), want) {
		t.Fatalf("cache holds %v, want %v", names(got), want)
	}
	// The WATCH follows the sync; wait for it within ctx's limit.
	poll(ctx, t, "the tweaked WATCH", sawWatch.Load)
	if !sawList.Load() {
		t.Fatal("tweak not applied to the LIST")
	}
	reporter, ok := inf.(cache.InformerHealthReporter)
	if !ok {
		t.Fatalf("Informer() is %T", inf)
	}
	if err := reporter.WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := reporter.Stats(); len(st.Reflector.Lists) == 0 {
		t.Fatalf("Stats after sync: %+v", st.Reflector)
	}
}

// The factory's transform is set on its informers.
func TestTransform(t *testing.T) {
	cs := fake.NewClientset(configMap("a", "x"))
	strip := func(obj any) (any, error) {
		c := obj.(*corev1.ConfigMap).DeepCopy()
		c.Labels = map[string]string{"transformed": "yes"}
		return c, nil
	}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTransform(strip))
	lister := f.Core().V1().ConfigMaps().Lister()
	start(t, f)
	c, err := lister.ConfigMaps("a").Get("x")
	if err != nil {
		t.Fatal(err)
	}
	if c.Labels["transformed"] != "yes" {
		t.Fatalf("cached object not transformed: %v", c.Labels)
	}
}

// ForResource serves built-in GVRs from the same informers as the typed
// accessors, and refuses others as client-go's does.
func TestForResource(t *testing.T) {
	cs := fake.NewClientset(configMap("a", "x"), &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "d"}})
	f := informers.NewSharedInformerFactory(cs, 0)
	cm, err := f.ForResource(corev1.SchemeGroupVersion.WithResource("configmaps"))
	if err != nil {
		t.Fatal(err)
	}
	dep, err := f.ForResource(appsv1.SchemeGroupVersion.WithResource("deployments"))
	if err != nil {
		t.Fatal(err)
	}
	if cm.Informer() != f.Core().V1().ConfigMaps().Informer() {
		t.Fatal("ForResource(configmaps) and Core().V1().ConfigMaps() serve different informers")
	}
	if _, ok := dep.Informer().(cache.InformerHealthReporter); !ok {
		t.Fatalf("ForResource(deployments) is %T", dep.Informer())
	}
	if _, err := f.ForResource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}); err == nil {
		t.Fatal("ForResource of an unknown resource: no error")
	}
	start(t, f)
	if _, err := dep.Lister().ByNamespace("a").Get("d"); err != nil {
		t.Fatal(err)
	}
	if _, err := cm.Lister().ByNamespace("a").Get("x"); err != nil {
		t.Fatal(err)
	}
}

// InformerFor keeps client-go's semantics: the first registration of a
// type wins, and the given newFunc builds it with the factory's client
// and the type's resync period.
func TestInformerForFirstRegistrationWins(t *testing.T) {
	cs := fake.NewClientset()
	f := informers.NewSharedInformerFactoryWithOptions(cs, time.Hour,
		informers.WithCustomResyncConfig(map[metav1.Object]time.Duration{&corev1.Secret{}: time.Minute}))
	var gotClient kubernetes.Interface
	var gotResync time.Duration
	custom := func(c kubernetes.Interface, resync time.Duration) clientgocache.SharedIndexInformer {
		gotClient, gotResync = c, resync
		return clientgoinformers.NewSharedInformerFactory(c, resync).Core().V1().Secrets().Informer()
	}
	mine := f.InformerFor(&corev1.Secret{}, custom)
	if gotClient != cs || gotResync != time.Minute {
		t.Fatalf("newFunc got (%v, %v), want the factory's client and the custom resync 1m", gotClient, gotResync)
	}
	if f.Core().V1().Secrets().Informer() != mine {
		t.Fatal("the typed accessor did not return the informer InformerFor registered first")
	}
	ours := f.Core().V1().ConfigMaps().Informer()
	called := false
	again := f.InformerFor(&corev1.ConfigMap{}, func(kubernetes.Interface, time.Duration) clientgocache.SharedIndexInformer {
		called = true
		return nil
	})
	if called || again != ours {
		t.Fatal("InformerFor replaced the informer the typed accessor registered first")
	}
	start(t, f) // WaitForSync also waits for the informer that is not ours
}

// WaitForSync names the informers that did not sync and why: one
// requested after Start, one whose LIST is forbidden.
func TestWaitForSyncNamesUnsynced(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("list", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", errors.New("no"))
	})
	f := informers.NewSharedInformerFactory(cs, 0)
	f.Core().V1().Secrets().Informer()
	ctx, cancel := context.WithCancel(t.Context())
	defer func() { cancel(); f.Shutdown() }()
	f.StartWithContext(ctx)
	f.Core().V1().Pods().Informer() // after Start
	// Each short wait ends unsynced; poll until the Reflector has seen
	// the refused LIST, within waitLimit.
	deadline := time.Now().Add(waitLimit)
	var err error
	for {
		short, stop := context.WithTimeout(ctx, 50*time.Millisecond)
		err = f.WaitForSync(short)
		stop()
		if apierrors.IsForbidden(err) || time.Now().After(deadline) {
			break
		}
	}
	if err == nil || !errors.Is(err, cache.ErrNotSynced) || !apierrors.IsForbidden(err) {
		t.Fatalf("WaitForSync: %v; want ErrNotSynced and the Forbidden error", err)
	}
	for _, want := range []string{"*v1.Secret", "*v1.Pod", "not started"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("WaitForSync's error does not name %q: %v", want, err)
		}
	}
	if h := f.Health()[reflect.TypeFor[*corev1.Secret]()]; h.Healthy {
		t.Fatalf("Health of the forbidden informer: %+v", h)
	}
}

// WithReflectorOptions reaches the typed accessors' informers: with
// Compact, they hold ConfigMaps as bytes and read them back equal.
func TestCompactFactory(t *testing.T) {
	client := fake.NewClientset(configMap("a", "one", "app", "x"), configMap("b", "two"))
	compact := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithReflectorOptions(cache.ReflectorOptions{Compact: &cache.CompactOptions{}}))
	plain := informers.NewSharedInformerFactory(client, 0)
	got, want := compact.Core().V1().ConfigMaps(), plain.Core().V1().ConfigMaps()
	reporter := got.Informer().(cache.InformerHealthReporter)
	want.Informer()
	start(t, compact)
	start(t, plain)
	st := reporter.Stats().Store
	if st == nil || st.Encoded != 2 {
		t.Fatalf("compact store's stats: %+v", st)
	}
	for _, key := range []string{"a/one", "b/two"} {
		ns, name, _ := strings.Cut(key, "/")
		g, err := got.Lister().ConfigMaps(ns).Get(name)
		if err != nil {
			t.Fatal(err)
		}
		w, _ := want.Lister().ConfigMaps(ns).Get(name)
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("%s: got %#v, want %#v", key, g, w)
		}
	}
}
