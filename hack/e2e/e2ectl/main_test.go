package main

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		nil, {"nope"}, {"keys"}, {"ports", "x"}, {"ports", "0"},
		{"ready", "u", "ca", "token"}, {"ready", "-pid", "x", "u", "ca", "t", "1s"},
		{"etcd-ready", "u", "soon"},
	} {
		if err := run(args); !errors.Is(err, errUsage) {
			t.Errorf("run(%q) = %v, want a usage error", args, err)
		}
	}
}

func TestKeysArePairedPEM(t *testing.T) {
	dir := t.TempDir()
	if err := writeKeys(dir); err != nil {
		t.Fatal(err)
	}
	keyPEM, _ := os.ReadFile(filepath.Join(dir, "sa.key"))
	pubPEM, _ := os.ReadFile(filepath.Join(dir, "sa.pub"))
	kb, _ := pem.Decode(keyPEM)
	pb, _ := pem.Decode(pubPEM)
	if kb == nil || pb == nil {
		t.Fatalf("not PEM:\n%s\n%s", keyPEM, pubPEM)
	}
	key, err := x509.ParsePKCS1PrivateKey(kb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.ParsePKIXPublicKey(pb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !key.PublicKey.Equal(pub) {
		t.Fatal("sa.pub is not sa.key's public key")
	}
}

// readyzServer answers /readyz with "ok" to the bearer token "secret"
// only, and writes its certificate to a CA file.
func readyzServer(t *testing.T) (url, caFile string) {
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" || r.Header.Get("Authorization") != "Bearer secret" {
			http.Error(w, "no", http.StatusForbidden)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(s.Close)
	caFile = filepath.Join(t.TempDir(), "ca.crt")
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	if err := os.WriteFile(caFile, cert, 0o600); err != nil {
		t.Fatal(err)
	}
	return s.URL, caFile
}

func TestReadyVerifiesTheServerAndSendsTheToken(t *testing.T) {
	url, caFile := readyzServer(t)
	if err := run([]string{"ready", url, caFile, "secret", "10s"}); err != nil {
		t.Fatal(err)
	}
	err := apiserverProbe(url, caFile, "wrong")(t.Context())
	if err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("wrong token: %v, want the 403 reported", err)
	}
	if err := apiserverProbe(url, filepath.Join(t.TempDir(), "missing.crt"), "secret")(t.Context()); err == nil {
		t.Fatal("probe without the CA file succeeded")
	}
	other := filepath.Join(t.TempDir(), "other.crt")
	if err := os.WriteFile(other, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := apiserverProbe(url, other, "secret")(t.Context()); err == nil {
		t.Fatal("probe with a CA file holding no certificate succeeded")
	}
}

func TestWaitEndsAtItsTimeoutWithTheLastAnswer(t *testing.T) {
	notReady := func(context.Context) error { return errors.New("not yet") }
	err := waitFor("server", 0, 0, notReady)
	if err == nil || !strings.Contains(err.Error(), "not yet") {
		t.Fatalf("waitFor = %v, want the timeout with the last answer", err)
	}
}

func TestEtcdReady(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" {
			_, _ = w.Write([]byte(`{"health":"false","reason":"elsewhere"}`))
			return
		}
		_, _ = w.Write([]byte(`{"health":"true","reason":""}`))
	}))
	defer s.Close()
	if err := run([]string{"etcd-ready", s.URL, "10s"}); err != nil {
		t.Fatal(err)
	}
	if err := etcdProbe(s.URL + "/nothing")(t.Context()); err == nil {
		t.Fatal("probe of a server answering with something else succeeded")
	}
}

func TestWaitEndsWhenTheProcessHasExited(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no true command:", err)
	}
	notReady := func(context.Context) error { return errors.New("not yet") }
	err := waitFor("server", cmd.Process.Pid, 0, notReady)
	if err == nil || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("waitFor = %v, want the exit reported", err)
	}
	if alive(cmd.Process.Pid) || !alive(os.Getpid()) {
		t.Fatal("alive is wrong about an exited process or this one")
	}
}
