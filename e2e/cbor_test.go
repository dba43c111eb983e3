//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	clientgodynamicinformer "k8s.io/client-go/dynamic/dynamicinformer"
	clientgofeatures "k8s.io/client-go/features"
	clientgofeaturestesting "k8s.io/client-go/features/testing"
	clientgoinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache/dynamicinformer"
	"github.com/kreflector/cache/informers"
)

// TestCBORInformersMatchClientGo turns client-go's CBOR gates on
// (ClientsAllowCBOR, ClientsPreferCBOR) and runs, against the second
// kube-apiserver (which serves CBOR: CBORServingAndStorage is on there),
// our dynamic and typed ConfigMap informers beside client-go's, through a
// sync and a live workload: the dynamic informers must hold objects
// reflect.DeepEqual to client-go's dynamic informer's, and the typed ones
// to a LIST of the server. The dynamic clients ask for CBOR, and their
// WatchList streams (by default), or LISTs and watches (with client-go's
// WatchListClient gate off, which ours follows too), must have come as
// CBOR; a typed clientset asks for protobuf, whatever the gates. It is
// not parallel: the gates are the process's.
func TestCBORInformersMatchClientGo(t *testing.T) {
	clientgofeaturestesting.SetFeatureDuringTest(t, clientgofeatures.ClientsAllowCBOR, true)
	clientgofeaturestesting.SetFeatureDuringTest(t, clientgofeatures.ClientsPreferCBOR, true)
	for _, watchList := range []bool{true, false} {
		t.Run(fmt.Sprintf("watchList=%v", watchList), func(t *testing.T) {
			clientgofeaturestesting.SetFeatureDuringTest(t, clientgofeatures.WatchListClient, watchList)
			cborInformers(t, watchList)
		})
	}
}

// cborInformers is one case of TestCBORInformersMatchClientGo.
func cborInformers(t *testing.T, watchList bool) {
	admin := client(t, testCluster.admin)
	ns := namespace(t, admin)
	const existing = 80
	for i := range existing {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-" + strconv.Itoa(i)}, Data: map[string]string{"i": strconv.Itoa(i)}}
		if _, err := admin.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	wire := &wireLog{}
	cfg := wire.config(testCluster.ungated(t))
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cs := client(t, cfg)
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	theirsDyn := clientgodynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil)
	oursDyn := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil)
	theirsTyped := clientgoinformers.NewSharedInformerFactoryWithOptions(cs, 0, clientgoinformers.WithNamespace(ns))
	oursTyped := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	stores := []clientgocache.Store{
		theirsDyn.ForResource(gvr).Informer().GetStore(), oursDyn.ForResource(gvr).Informer().GetStore(),
		theirsTyped.Core().V1().ConfigMaps().Informer().GetStore(), oursTyped.Core().V1().ConfigMaps().Informer().GetStore(),
	}
	for _, f := range []interface{ Start(<-chan struct{}) }{theirsDyn, oursDyn, theirsTyped, oursTyped} {
		f.Start(ctx.Done())
	}
	defer func() {
		cancel()
		for _, f := range []interface{ Shutdown() }{theirsDyn, oursDyn, theirsTyped, oursTyped} {
			f.Shutdown()
		}
	}()
	workload(t, admin, ns, existing, 120, 29)
	waitCBORStoresAgree(t, admin, ns, stores)
	assertCBORWire(t, wire, watchList)
}

// assertCBORWire fails t unless the dynamic informers' WatchList streams
// (watchList), or their LISTs and watches, came as CBOR, two of each
// (theirs and ours).
func assertCBORWire(t *testing.T, wire *wireLog, watchList bool) {
	t.Helper()
	lines, _ := wire.snapshot()
	count := func(suffix string) int {
		n := 0
		for _, l := range lines {
			if strings.Contains(l, "-> 200 "+suffix+",") {
				n++
			}
		}
		return n
	}
	lists, streams := count("application/cbor"), count("application/cbor-seq")
	if streams < 2 || !watchList && lists < 2 || watchList && lists != 0 {
		t.Fatalf("%d CBOR LISTs and %d CBOR streams, want 2 of each (WatchList: 2 streams, no LIST):\n  %s", lists, streams, strings.Join(lines, "\n  "))
	}
	t.Logf("%d CBOR LISTs, %d CBOR streams:\n  %s", lists, streams, strings.Join(lines, "\n  "))
}

// waitCBORStoresAgree waits until the dynamic stores (theirs, ours) hold
// deep-equal objects and the typed ones (theirs, ours) deep-equal to a
// LIST of the server.
func waitCBORStoresAgree(t *testing.T, admin kubernetes.Interface, ns string, stores []clientgocache.Store) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		server, err := admin.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		diffs := cborDiffs(server.Items, stores)
		if len(diffs) == 0 {
			t.Logf("%d ConfigMaps alike in the four stores", len(server.Items))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stores differ: %q", diffs[:min(len(diffs), 5)])
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func cborDiffs(server []corev1.ConfigMap, stores []clientgocache.Store) []string {
	var out []string
	for i, s := range stores {
		if n := len(s.ListKeys()); n != len(server) {
			out = append(out, fmt.Sprintf("store %d holds %d, the server %d", i, n, len(server)))
		}
	}
	for _, want := range server {
		key := want.Namespace + "/" + want.Name
		theirs, _, _ := stores[0].GetByKey(key)
		ours, _, _ := stores[1].GetByKey(key)
		if theirs == nil || !reflect.DeepEqual(theirs, ours) {
			out = append(out, key+": the dynamic stores differ")
		}
		for _, s := range stores[2:] {
			got, _, _ := s.GetByKey(key)
			if !reflect.DeepEqual(got, &want) {
				out = append(out, key+": a typed store differs from the server")
			}
		}
	}
	return out
}
