// Package e2e runs the Reflector against a real kube-apiserver and etcd on
// loopback. hack/e2e/run.sh builds both from the Go module proxy and runs
// this package with KREFLECTOR_E2E_BIN pointing at them; without it every
// test skips, so `go test ./...` stays self-contained.
package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

var testCluster *cluster

func TestMain(m *testing.M) { os.Exit(runWithCluster(m)) }

func runWithCluster(m *testing.M) int {
	bin := os.Getenv("KREFLECTOR_E2E_BIN")
	if bin == "" {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "kreflector-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := startCluster(ctx, bin, dir)
	defer c.stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: starting the cluster: %v (logs in %s)\n", err, dir)
		return 1
	}
	testCluster = c
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "e2e: server logs kept in %s\n", dir)
		return code
	}
	c.stop()
	_ = os.RemoveAll(dir)
	return code
}

// needCluster returns the running cluster, or skips t when there is none.
func needCluster(t *testing.T) *cluster {
	t.Helper()
	if testCluster == nil {
		t.Skip("no cluster: run hack/e2e/run.sh (it sets KREFLECTOR_E2E_BIN)")
	}
	return testCluster
}
