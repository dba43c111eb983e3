//go:build e2e

package controllerruntime

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// e2eCluster reads the admin config and the no-rights user's token of the
// cluster hack/e2e.sh started in KREFLECTOR_E2E_DIR; the test is skipped
// when that is not set (the suite is run by hack/e2e.sh).
func e2eCluster(t *testing.T) (admin, stranger *rest.Config) {
	t.Helper()
	dir := os.Getenv("KREFLECTOR_E2E_DIR")
	if dir == "" {
		t.Skip("KREFLECTOR_E2E_DIR is not set: run hack/e2e.sh")
	}
	admin, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	token, err := readSetting(filepath.Join(dir, "env"), "STRANGER_TOKEN")
	if err != nil {
		t.Fatal(err)
	}
	stranger = rest.CopyConfig(admin)
	stranger.BearerToken = token
	return admin, stranger
}

// readSetting returns key's value from a file of KEY=value lines.
func readSetting(path, key string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && k == key {
			return v, nil
		}
	}
	return "", fmt.Errorf("%s has no %s", path, key)
}

// freshNamespace creates a namespace of its own for one test.
func freshNamespace(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "kreflector-cr-"}}
	got, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got.Name
}

func TestE2EManagerReconcilesThroughOurInformers(t *testing.T) {
	admin, _ := e2eCluster(t)
	checkReconcilesEverything(t, admin, freshNamespace(t, admin))
}

func TestE2EManagerForbiddenCauseIsVisible(t *testing.T) {
	admin, stranger := e2eCluster(t)
	checkForbiddenIsVisible(t, stranger, freshNamespace(t, admin))
}
