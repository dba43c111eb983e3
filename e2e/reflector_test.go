package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgocache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache"
)

// client returns a clientset of c authenticating with token.
func (c *cluster) client(t *testing.T, token string) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.config(token))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// namespace creates a namespace for t, deleted when t ends.
func namespace(t *testing.T, cs *kubernetes.Clientset) string {
	t.Helper()
	name := strings.ToLower(fmt.Sprintf("e2e-%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), rand.IntN(1e6)))
	name = strings.NewReplacer("_", "-", "=", "-").Replace(name)
	if len(name) > 63 {
		name = name[len(name)-63:]
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Namespaces().Delete(context.WithoutCancel(t.Context()), name, metav1.DeleteOptions{})
	})
	return name
}

// createConfigMaps creates n ConfigMaps cm-0 … cm-(n-1) in ns, 16 at a time.
func createConfigMaps(t *testing.T, cs *kubernetes.Clientset, ns string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-" + strconv.Itoa(i)}, Data: map[string]string{"i": strconv.Itoa(i)}}
			if _, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

// workload runs creates, updates and deletes in ns and returns the
// resourceVersion of its last write.
func workload(t *testing.T, cs *kubernetes.Clientset, ns string, existing, steps int) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, uint64(existing)))
	api := cs.CoreV1().ConfigMaps(ns)
	var last string
	for step := range steps {
		name := "cm-" + strconv.Itoa(rng.IntN(existing+steps/4))
		cm, err := api.Get(t.Context(), name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"step": strconv.Itoa(step)}}
			cm, err = api.Create(t.Context(), cm, metav1.CreateOptions{})
		case err == nil && rng.IntN(3) == 0:
			err = api.Delete(t.Context(), name, metav1.DeleteOptions{})
			cm = nil
		case err == nil:
			cm.Data = map[string]string{"step": strconv.Itoa(step)}
			cm, err = api.Update(t.Context(), cm, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Fatalf("step %d on %s: %v", step, name, err)
		}
		if cm != nil {
			last = cm.ResourceVersion
		}
	}
	return last
}

// serverState is name@resourceVersion of every ConfigMap in ns.
func serverState(t *testing.T, cs *kubernetes.Clientset, ns string) map[string]string {
	t.Helper()
	list, err := cs.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, cm := range list.Items {
		out[cm.Name] = cm.ResourceVersion
	}
	return out
}

func storeState(objs []interface{}) map[string]string {
	out := map[string]string{}
	for _, o := range objs {
		cm := o.(*corev1.ConfigMap)
		out[cm.Name] = cm.ResourceVersion
	}
	return out
}

// waitForRV waits until r has reached resourceVersion rv (etcd's are
// numbers) and fails t after a minute.
func waitForRV(t *testing.T, r *cache.Reflector, rv string) {
	t.Helper()
	want, _ := strconv.ParseUint(rv, 10, 64)
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		got, _ := strconv.ParseUint(r.LastSyncResourceVersion(), 10, 64)
		return got >= want, nil
	})
	if err != nil {
		t.Fatalf("reflector at RV %s, want %s: %v", r.LastSyncResourceVersion(), rv, err)
	}
}

// runReflector runs r until t ends, and waits for it to return then.
func runReflector(t *testing.T, r *cache.Reflector) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan struct{})
	go func() { r.RunWithContext(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// informerStore is our Reflector feeding client-go's DeltaFIFO, popped
// into an indexer as an informer does.
type informerStore struct {
	fifo    *clientgocache.DeltaFIFO
	indexer clientgocache.Indexer
}

func newInformerStore(t *testing.T) *informerStore {
	indexer := clientgocache.NewIndexer(clientgocache.MetaNamespaceKeyFunc, clientgocache.Indexers{})
	s := &informerStore{indexer: indexer, fifo: clientgocache.NewDeltaFIFOWithOptions(clientgocache.DeltaFIFOOptions{KnownObjects: indexer, EmitDeltaTypeReplaced: true})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			_, err := s.fifo.Pop(func(obj interface{}, _ bool) error {
				for _, d := range obj.(clientgocache.Deltas) {
					var err error
					if d.Type == clientgocache.Deleted {
						err = indexer.Delete(d.Object)
					} else {
						err = indexer.Update(d.Object)
					}
					if err != nil {
						return err
					}
				}
				return nil
			})
			if errors.Is(err, clientgocache.ErrFIFOClosed) {
				return
			}
		}
	}()
	t.Cleanup(func() { s.fifo.Close(); <-done })
	return s
}

func TestReflectorFollowsARealServer(t *testing.T) {
	c := needCluster(t)
	cs := c.client(t, adminToken)
	for _, mode := range []string{"watchlist", "list", "deltafifo"} {
		t.Run(mode, func(t *testing.T) {
			ns := namespace(t, cs)
			createConfigMaps(t, cs, ns, 1200)
			lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", ns, fields.Everything())
			opts := cache.ReflectorOptions{Name: mode, UseWatchList: ptr.To(mode != "list")}
			var store cache.ReflectorStore
			list := func() []interface{} { return store.(cache.Store).List() }
			if mode == "deltafifo" {
				s := newInformerStore(t)
				store, list = s.fifo, s.indexer.List
			} else {
				store = cache.NewStore(cache.MetaNamespaceKeyFunc)
			}
			r := cache.NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, opts)
			runReflector(t, r)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			if err := r.WaitForSync(ctx); err != nil {
				t.Fatal(err)
			}
			st := r.Stats()
			if mode == "list" && (st.Lists[cache.ListInitial] != 1 || st.WatchLists[cache.ListInitial] != 0) ||
				mode != "list" && (st.WatchLists[cache.ListInitial] != 1 || st.Lists[cache.ListInitial]+st.Lists[cache.ListWatchListFallback] != 0) {
				t.Errorf("initial sync not made as configured: lists %v, watch lists %v", st.Lists, st.WatchLists)
			}
			if st.ItemsListed != 1200 {
				t.Errorf("items listed %d, want 1200", st.ItemsListed)
			}
			last := workload(t, cs, ns, 1200, 300)
			waitForRV(t, r, last)
			if want, got := serverState(t, cs, ns), storeState(list()); !maps.Equal(want, got) {
				t.Fatalf("store (%d objects) differs from the server (%d objects)", len(got), len(want))
			}
		})
	}
}

func TestForbiddenListIsTheCauseWaitForSyncReturns(t *testing.T) {
	c := needCluster(t)
	cs := c.client(t, strangerToken)
	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", metav1.NamespaceDefault, fields.Everything())
	r := cache.NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cache.NewStore(cache.MetaNamespaceKeyFunc), cache.ReflectorOptions{})
	runReflector(t, r)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	err := r.WaitForSync(ctx)
	if !apierrors.IsForbidden(err) || !errors.Is(err, cache.ErrNotSynced) {
		t.Fatalf("WaitForSync = %v; want a Forbidden cause", err)
	}
	if h := r.Health(); h.State != cache.Degraded || h.Reason != cache.ReasonForbidden {
		t.Fatalf("health %+v", h)
	}
}
