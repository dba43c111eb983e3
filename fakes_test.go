package cache

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
)

func fakeConfigMap(ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// fakeListWatch is a ListWatch over a fake clientset's typed ConfigMap
// client, wrapped as client-go's generated informers wrap theirs.
func fakeListWatch(cs *fake.Clientset) ListerWatcher {
	cms := cs.CoreV1().ConfigMaps(metav1.NamespaceAll)
	return ToListWatcherWithWatchListSemantics(&ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return cms.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return cms.Watch(ctx, o)
		},
	}, cs)
}

// A fake clientset never sends a WatchList's initial-events-end bookmark;
// wrapped as client-go wraps it, our informer LISTs instead, syncs, and then
// sees the fake's writes through its watch.
func TestInformerOverFakeClientsetSyncs(t *testing.T) {
	cs := fake.NewClientset(fakeConfigMap("a", "one"), fakeConfigMap("b", "two"))
	inf := NewSharedIndexInformer(fakeListWatch(cs), &corev1.ConfigMap{}, 0, Indexers{})
	added := make(chan string, 8)
	if _, err := inf.AddEventHandler(ResourceEventHandlerFuncs{AddFunc: func(obj interface{}) {
		added <- obj.(*corev1.ConfigMap).Name
	}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stop := runInformer(t, inf)
	defer stop()
	if err := inf.(InformerHealthReporter).WaitForSync(ctx); err != nil {
		t.Fatalf("WaitForSync over a fake clientset: %v", err)
	}
	if n := len(inf.GetStore().ListKeys()); n != 2 {
		t.Fatalf("synced with %d objects, want 2", n)
	}
	if _, err := cs.CoreV1().ConfigMaps("c").Create(ctx, fakeConfigMap("c", "three"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for !seen["three"] {
		select {
		case name := <-added:
			seen[name] = true
		case <-ctx.Done():
			t.Fatalf("the object created after the sync never reached the handler (saw %v)", seen)
		}
	}
}

// A fake clientset's RESTClient is nil: building a ListWatch on it fails
// at once with a message that says what to do, instead of a nil-pointer
// panic inside the Reflector at the first LIST.
func TestListWatchFromFakeRESTClientPanicsClearly(t *testing.T) {
	cs := fake.NewClientset()
	defer func() {
		msg, _ := recover().(string)
		if !strings.Contains(msg, "fake clientset") || !strings.Contains(msg, "ToListWatcherWithWatchListSemantics") {
			t.Fatalf("panic %q does not say that the client is a fake's nor what to use instead", msg)
		}
	}()
	NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", metav1.NamespaceAll, fields.Everything())
	t.Fatal("NewListWatchFromClient accepted a nil REST client")
}

// client-go's typed informer wraps ours: typed handlers receive typed
// objects and the typed indexer reads our indexer.
func TestTypedInformerOverOurs(t *testing.T) {
	cs := fake.NewClientset(fakeConfigMap("a", "one"))
	inf := NewTypedSharedIndexInformer[*corev1.ConfigMap](
		NewSharedIndexInformer(fakeListWatch(cs), &corev1.ConfigMap{}, 0, Indexers{}))
	got := make(chan *corev1.ConfigMap, 1)
	if _, err := inf.AddTypedEventHandler(TypedResourceEventHandlerFuncs[*corev1.ConfigMap]{
		AddFunc: func(cm *corev1.ConfigMap) { got <- cm },
	}); err != nil {
		t.Fatal(err)
	}
	if err := inf.AddTypedIndexers(TypedIndexers[*corev1.ConfigMap]{
		"name": func(cm *corev1.ConfigMap) ([]string, error) { return []string{cm.Name}, nil },
	}); err != nil {
		t.Fatal(err)
	}
	stop := runInformer(t, inf)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	select {
	case cm := <-got:
		if cm.Name != "one" {
			t.Fatalf("typed handler got %s, want one", cm.Name)
		}
	case <-ctx.Done():
		t.Fatal("the typed handler got no add")
	}
	byName, err := inf.GetTypedIndexer().ByTypedIndex("name", "one")
	if err != nil || len(byName) != 1 || byName[0].Namespace != "a" {
		t.Fatalf("typed index lookup = %v, %v; want a/one", byName, err)
	}
}

// NewNamespaceKeyedIndexerAndReflector returns our Reflector, filling the
// namespace-indexed indexer it returns beside it.
func TestNamespaceKeyedIndexerAndReflector(t *testing.T) {
	cs := fake.NewClientset(fakeConfigMap("a", "one"), fakeConfigMap("a", "two"), fakeConfigMap("b", "three"))
	indexer, r := NewNamespaceKeyedIndexerAndReflector(fakeListWatch(cs), &corev1.ConfigMap{}, 0)
	ctx, stop := startRunIn(t, context.Background(), r.RunWithContext)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := r.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	inA, err := indexer.ByIndex(NamespaceIndex, "a")
	if err != nil || len(inA) != 2 {
		t.Fatalf("namespace a holds %d objects (%v), want 2", len(inA), err)
	}
}
