//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Server names, as hack/e2e/cluster.sh knows them.
const (
	etcdServer = "etcd"
	apiServer  = "kube-apiserver"
	// ungatedServer is a second kube-apiserver on the same etcd with the
	// feature gate ShardedListAndWatch off (apiServer has it on): it
	// ignores ListOptions.ShardSelector. It also serves CBOR
	// (CBORServingAndStorage on). It runs only while a test uses it
	// (cluster.ungated).
	ungatedServer = "kube-apiserver-ungated"
)

// cluster is the etcd and kube-apiserver that hack/e2e/cluster.sh started
// in dir. Its fields are set once by openCluster and only read afterwards.
type cluster struct {
	dir string
	// env is dir/env: the settings cluster.sh fixed at `up`.
	env map[string]string
	// script is the path of hack/e2e/cluster.sh.
	script string
	// kubeconfig is the admin kubeconfig cluster.sh wrote.
	kubeconfig string
	// admin is in system:masters; stranger is authenticated but has no
	// RBAC rights at all.
	admin, stranger *rest.Config

	// ungatedUsers counts the tests using ungatedServer, which runs while
	// it is positive; ungatedMu guards it and the starts and stops.
	ungatedMu    sync.Mutex
	ungatedUsers int
}

// openCluster reads the cluster in dir and builds its client configs.
func openCluster(dir string) (*cluster, error) {
	env, err := readEnv(filepath.Join(dir, "env"))
	if err != nil {
		return nil, err
	}
	// go test runs a package's tests in the package's directory.
	script, err := filepath.Abs(filepath.Join("..", "hack", "e2e", "cluster.sh"))
	if err != nil {
		return nil, fmt.Errorf("locating cluster.sh: %w", err)
	}
	c := &cluster{dir: dir, env: env, script: script, kubeconfig: filepath.Join(dir, "kubeconfig")}
	c.admin, err = clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", c.kubeconfig, err)
	}
	c.admin.QPS, c.admin.Burst = 500, 1000
	c.stranger = rest.CopyConfig(c.admin)
	c.stranger.BearerToken = env["STRANGER_TOKEN"]
	if c.stranger.BearerToken == "" || env["ETCD_URL"] == "" {
		return nil, fmt.Errorf("%s lacks STRANGER_TOKEN or ETCD_URL", filepath.Join(dir, "env"))
	}
	return c, nil
}

// readEnv parses KEY=value lines; a value runs to the end of its line.
func readEnv(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the cluster settings: %w", err)
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			env[k] = v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return env, nil
}

// client returns a clientset for cfg.
func client(t *testing.T, cfg *rest.Config) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// run runs cluster.sh with args (DIR last) and fails t if it fails.
func (c *cluster) run(t *testing.T, ctx context.Context, args ...string) {
	t.Helper()
	start := time.Now()
	cmd := exec.CommandContext(ctx, c.script, append(args, c.dir)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cluster.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("cluster.sh %s (%v): %s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond), strings.TrimSpace(string(out)))
}

// stopServer stops name (etcdServer or apiServer) and returns once its
// process has exited. Register restoreCluster first.
func (c *cluster) stopServer(t *testing.T, name string) {
	t.Helper()
	c.run(t, t.Context(), "stop", name)
}

// killServer SIGKILLs name, as a crash would, and returns once it is gone.
func (c *cluster) killServer(t *testing.T, name string) {
	t.Helper()
	c.run(t, t.Context(), "kill", name)
}

// startServer starts name again on the same ports, data and certificates,
// and returns once it is ready.
func (c *cluster) startServer(t *testing.T, name string) {
	t.Helper()
	c.run(t, t.Context(), "start", name)
}

// restoreCluster makes sure, when t ends (passed or not), that etcd and
// kube-apiserver run and kube-apiserver is ready, so that a test that
// stops a server never leaves the next test without one. cluster.sh start
// leaves a running server alone and waits until it is ready.
func (c *cluster) restoreCluster(t *testing.T) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 3*time.Minute)
		defer cancel()
		c.run(t, ctx, "start", etcdServer)
		c.run(t, ctx, "start", apiServer)
	})
}

// ungated returns an admin config for ungatedServer, starting it if no
// test uses it yet, and stops it when the last test using it ends, so
// that the rest of the suite runs on one kube-apiserver as before. It
// shares the certificates and tokens of the first kube-apiserver, so only
// the address differs.
func (c *cluster) ungated(t *testing.T) *rest.Config {
	t.Helper()
	url := c.env["UNGATED_APISERVER_URL"]
	if url == "" {
		t.Fatalf("%s lacks UNGATED_APISERVER_URL", filepath.Join(c.dir, "env"))
	}
	c.ungatedMu.Lock()
	defer c.ungatedMu.Unlock()
	if c.ungatedUsers == 0 {
		c.run(t, t.Context(), "start", ungatedServer)
	}
	c.ungatedUsers++
	t.Cleanup(func() {
		c.ungatedMu.Lock()
		defer c.ungatedMu.Unlock()
		if c.ungatedUsers--; c.ungatedUsers == 0 {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 3*time.Minute)
			defer cancel()
			c.run(t, ctx, "stop", ungatedServer)
		}
	})
	cfg := rest.CopyConfig(c.admin)
	cfg.Host = url
	return cfg
}
