//go:build e2e

package e2e

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
)

// TestSideBySideWithClientGo runs client-go's Reflector and ours at the
// same time on the same namespace through a live workload; at the end
// client-go's store, ours and the server hold the same objects.
func TestSideBySideWithClientGo(t *testing.T) {
	t.Parallel()
	cs := client(t, testCluster.admin)
	ns := namespace(t, cs)
	const existing, steps = 300, 400
	mustCreateConfigMaps(t, cs, ns, existing)

	ourStore := cache.NewStore(cache.MetaNamespaceKeyFunc)
	ours := track(ourStore)
	r := cache.NewReflectorWithOptions(configMapsLW(cs, ns), &corev1.ConfigMap{}, ours, cache.ReflectorOptions{Name: "ours"})
	runReflector(t, r)

	theirStore := clientgocache.NewStore(clientgocache.MetaNamespaceKeyFunc)
	theirs := track(theirStore)
	theirLW := clientgocache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", ns, fields.Everything())
	runClientGoReflector(t, clientgocache.NewReflectorWithOptions(theirLW, &corev1.ConfigMap{}, theirs, clientgocache.ReflectorOptions{Name: "client-go"}))

	mustSync(t, r)
	ctx, cancel := context.WithTimeout(t.Context(), minute)
	defer cancel()
	err := theirs.n.waitUntil(ctx, func() bool {
		_, listRV, _ := theirs.state()
		return listRV != ""
	})
	if err != nil {
		t.Fatalf("client-go's Reflector not synced within a minute: %v", err)
	}

	last := workload(t, cs, ns, existing, steps, 7)
	mustReachRV(t, ours, last)
	mustReachRV(t, theirs, last)
	server, err := serverList(t.Context(), cs, "configmaps", ns)
	if err != nil {
		t.Fatal(err)
	}
	assertSame(t, "the server", server, "our store", ourStore.List())
	assertSame(t, "the server", server, "client-go's store", theirStore.List())
	assertSame(t, "client-go's store", theirStore.List(), "our store", ourStore.List())
}

// runClientGoReflector runs client-go's r until t ends, and waits for it
// to return then.
func runClientGoReflector(t *testing.T, r *clientgocache.Reflector) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan struct{})
	go func() { r.RunWithContext(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}
