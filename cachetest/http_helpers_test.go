package cachetest_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kreflector/cache/cachetest"
)

// waitLimit bounds every wait of the HTTP tests: generous, since a failure
// to converge is a hang, not a slow pass.
const waitLimit = 60 * time.Second

// startHTTP returns a started server serving ConfigMaps and a clientset
// from its RESTConfig; the server is closed when t ends.
func startHTTP(t *testing.T, opts cachetest.Options) (*cachetest.Server, *cachetest.Resource, kubernetes.Interface) {
	t.Helper()
	srv, cms := newServer(t, opts)
	srv.Start()
	cs, err := kubernetes.NewForConfig(srv.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return srv, cms, cs
}

// bounded returns a context that ends after waitLimit or with t.
func bounded(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

// eventually waits for cond, checking it every millisecond, and fails t
// if ctx ends first. It is for conditions on server state that offers no
// notification (Stats); the outcome does not depend on timing.
func eventually(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("gave up waiting for %s: %v", what, ctx.Err())
		case <-tick.C:
		}
	}
}

// cmNames returns the names of a ConfigMap list's items.
func cmNames(list *corev1.ConfigMapList) []string {
	out := []string{}
	for _, c := range list.Items {
		out = append(out, c.Name)
	}
	return out
}
