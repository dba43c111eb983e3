//go:build e2e

// Package e2e runs the Reflector against a real kube-apiserver and etcd on
// loopback. It builds only with the tag e2e: hack/e2e.sh builds both
// servers, starts them with fresh data in a temporary directory
// (hack/e2e/cluster.sh up), runs this package with KREFLECTOR_E2E_DIR set
// to that directory, and always stops them and removes it afterwards.
//
// Tests that stop and start a server (through cluster.sh, as the script
// does) are sequential and leave the cluster ready, as are those that
// must run alone (they compact etcd, time faults or take both cores for a
// while); every other test calls t.Parallel, so that Go runs them only
// after the sequential ones.
package e2e

import (
	"fmt"
	"os"
	"testing"
)

// testCluster is the cluster in KREFLECTOR_E2E_DIR; TestMain sets it.
var testCluster *cluster

func TestMain(m *testing.M) {
	dir := os.Getenv("KREFLECTOR_E2E_DIR")
	if dir == "" {
		fmt.Fprintln(os.Stderr, "e2e: KREFLECTOR_E2E_DIR is not set. Run the suite with hack/e2e.sh:"+
			" it builds and starts etcd and kube-apiserver on loopback, sets KREFLECTOR_E2E_DIR"+
			" and passes its arguments to go test (hack/e2e.sh -run TestName).")
		os.Exit(2)
	}
	c, err := openCluster(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	testCluster = c
	os.Exit(m.Run())
}
