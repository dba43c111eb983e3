//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache"
)

// A compact informer on a real kube-apiserver: through a LIST or a
// WatchList and a live workload of creates, updates and deletes, it holds
// its ConfigMaps as bytes (every one encoded) and reads back each one
// reflect.DeepEqual to a LIST of the server, over JSON and over protobuf.
func TestCompactInformerMatchesTheServer(t *testing.T) {
	t.Parallel()
	for _, enc := range []string{"json", "protobuf"} {
		for _, watchList := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/watchList=%v", enc, watchList), func(t *testing.T) {
				t.Parallel()
				compactMatchesTheServer(t, client(t, encodingConfig(testCluster.admin, enc)), watchList)
			})
		}
	}
}

func compactMatchesTheServer(t *testing.T, cs *kubernetes.Clientset, watchList bool) {
	ns := namespace(t, cs)
	const existing = 120
	for i := range existing {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "cm-" + strconv.Itoa(i), Labels: map[string]string{"app": "compact"}},
			Data:       map[string]string{"config.yaml": "level: info\nindex: " + strconv.Itoa(i) + "\n"},
		}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	o := cache.ReflectorOptions{Name: "compact", UseWatchList: ptr.To(watchList), Compact: &cache.CompactOptions{}}
	inf := cache.NewSharedIndexInformerWith(o)(configMapsLW(cs, ns), &corev1.ConfigMap{}, 0, cache.Indexers{})
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
	reporter := inf.(cache.InformerHealthReporter)
	if err := reporter.WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	workload(t, cs, ns, existing, 200, 13)
	var server []interface{}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var err error
		if server, err = serverList(t.Context(), cs, "configmaps", ns); err != nil {
			t.Fatal(err)
		}
		diffs := compactDiffs(inf.GetIndexer(), server)
		if len(diffs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the compact informer differs from the server: %q", diffs[:min(len(diffs), 5)])
		}
		time.Sleep(200 * time.Millisecond)
	}
	st := reporter.Stats().Store
	if st == nil || st.Encoded != len(server) || st.Objects != len(server) {
		t.Fatalf("compact store's stats %+v, want %d objects, every one encoded", st, len(server))
	}
	t.Logf("%d ConfigMaps equal to the server's, held in %d bytes (%.0f per object)", len(server), st.BytesHeld, float64(st.BytesHeld)/float64(len(server)))
}

// compactDiffs names the differences between the store and the server's
// objects.
func compactDiffs(store cache.Store, server []interface{}) []string {
	var out []string
	if n := len(store.ListKeys()); n != len(server) {
		out = append(out, fmt.Sprintf("the server holds %d ConfigMaps, the store %d", len(server), n))
	}
	for _, o := range server {
		want := o.(*corev1.ConfigMap)
		got, ok, err := store.GetByKey(want.Namespace + "/" + want.Name)
		if err != nil || !ok || !reflect.DeepEqual(got, want) {
			out = append(out, fmt.Sprintf("%s: held %v (%v), differs", want.Name, ok, err))
		}
	}
	return out
}
