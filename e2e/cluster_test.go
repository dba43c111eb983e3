package e2e

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Tokens the cluster accepts: the admin is in system:masters; the
// stranger is authenticated but has no RBAC rights at all.
const (
	adminToken    = "kreflector-e2e-admin"
	strangerToken = "kreflector-e2e-stranger"
)

// cluster is a real etcd and kube-apiserver on loopback, started from the
// binaries hack/e2e/build.sh builds. stop kills both and waits for them.
type cluster struct {
	dir        string
	host       string
	caFile     string
	kubeconfig string
	procs      []*process
}

// process is a started server; exited is closed once it has exited.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// startCluster starts etcd, then kube-apiserver, and waits until the API
// server reports ready. Logs go to etcd.log and kube-apiserver.log in dir.
func startCluster(ctx context.Context, bin, dir string) (*cluster, error) {
	c := &cluster{dir: dir}
	etcdURL, err := c.startEtcd(bin)
	if err != nil {
		return c, err
	}
	if err := c.startAPIServer(bin, etcdURL); err != nil {
		return c, err
	}
	if err := c.waitReady(ctx); err != nil {
		return c, err
	}
	return c, c.writeKubeconfig()
}

func (c *cluster) startEtcd(bin string) (string, error) {
	client, peer := freePort(), freePort()
	clientURL := "http://127.0.0.1:" + client
	peerURL := "http://127.0.0.1:" + peer
	return clientURL, c.start(filepath.Join(bin, "etcd"), "etcd.log",
		"--name=e2e", "--data-dir="+filepath.Join(c.dir, "etcd"),
		"--listen-client-urls="+clientURL, "--advertise-client-urls="+clientURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=e2e="+peerURL, "--log-level=warn")
}

func (c *cluster) startAPIServer(bin, etcdURL string) error {
	key, pub, err := c.writeServiceAccountKeys()
	if err != nil {
		return err
	}
	tokens := filepath.Join(c.dir, "tokens.csv")
	users := fmt.Sprintf("%s,admin,admin-uid,\"system:masters\"\n%s,stranger,stranger-uid\n", adminToken, strangerToken)
	if err := os.WriteFile(tokens, []byte(users), 0o600); err != nil {
		return err
	}
	port := freePort()
	c.host = "https://127.0.0.1:" + port
	certs := filepath.Join(c.dir, "certs")
	c.caFile = filepath.Join(certs, "apiserver.crt")
	return c.start(filepath.Join(bin, "kube-apiserver"), "kube-apiserver.log",
		"--etcd-servers="+etcdURL, "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port="+port, "--cert-dir="+certs, "--token-auth-file="+tokens,
		"--authorization-mode=RBAC", "--service-cluster-ip-range=10.0.0.0/24",
		"--endpoint-reconciler-type=none",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+pub, "--service-account-signing-key-file="+key)
}

// start runs a server process with its output in logName.
func (c *cluster) start(path, logName string, args ...string) error {
	log, err := os.Create(filepath.Join(c.dir, logName))
	if err != nil {
		return err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("starting %s: %w", filepath.Base(path), err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); log.Close(); close(p.exited) }()
	c.procs = append(c.procs, p)
	return nil
}

// exited names a server process that has exited, or returns "".
func (c *cluster) exited() string {
	for _, p := range c.procs {
		select {
		case <-p.exited:
			return filepath.Base(p.cmd.Path)
		default:
		}
	}
	return ""
}

func (c *cluster) writeServiceAccountKeys() (keyFile, pubFile string, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", "", err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", "", err
	}
	keyFile, pubFile = filepath.Join(c.dir, "sa.key"), filepath.Join(c.dir, "sa.pub")
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	return keyFile, pubFile, errors.Join(os.WriteFile(keyFile, keyPEM, 0o600), os.WriteFile(pubFile, pubPEM, 0o600))
}

// waitReady polls /readyz until the API server answers ok. Polling is
// right here: the server is a separate process with its own start-up time.
// The server writes its self-signed certificate as it starts, so this one
// request skips verifying it; every client afterwards verifies.
func (c *cluster) waitReady(ctx context.Context) error {
	cfg := c.config(adminToken)
	cfg.TLSClientConfig = rest.TLSClientConfig{Insecure: true}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		if name := c.exited(); name != "" {
			return false, fmt.Errorf("%s exited", name)
		}
		var code int
		cs.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&code)
		return code == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("kube-apiserver not ready (see %s): %w", filepath.Join(c.dir, "kube-apiserver.log"), err)
	}
	return nil
}

// config is a client configuration authenticating with token.
func (c *cluster) config(token string) *rest.Config {
	return &rest.Config{
		Host:            c.host,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAFile: c.caFile},
		QPS:             500,
		Burst:           1000,
	}
}

// writeKubeconfig writes an admin kubeconfig for programs (examples/watch).
func (c *cluster) writeKubeconfig() error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: c.host, CertificateAuthority: c.caFile}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: adminToken}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "admin"}
	cfg.CurrentContext = "e2e"
	c.kubeconfig = filepath.Join(c.dir, "kubeconfig")
	return clientcmd.WriteToFile(*cfg, c.kubeconfig)
}

// stop kills the processes, newest first, and waits for each to exit.
func (c *cluster) stop() {
	defer func() { c.procs = nil }()
	for i := len(c.procs) - 1; i >= 0; i-- {
		_ = c.procs[i].cmd.Process.Kill()
		<-c.procs[i].exited
	}
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}
