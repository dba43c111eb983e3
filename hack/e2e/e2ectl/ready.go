package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// pollInterval is how often readiness is asked for. Polling is what there
// is: the servers are separate processes with their own start-up time.
const pollInterval = 200 * time.Millisecond

// probe asks once whether a server is ready; the error says why not.
type probe func(ctx context.Context) error

// parseWait parses "[-pid PID] ARGS… TIMEOUT" with want positional
// arguments before TIMEOUT.
func parseWait(name string, args []string, want int) (pid int, pos []string, timeout time.Duration, err error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.IntVar(&pid, "pid", 0, "")
	if err := fs.Parse(args); err != nil {
		return 0, nil, 0, fmt.Errorf("%s: %v: %w", name, err, errUsage)
	}
	if fs.NArg() != want+1 {
		return 0, nil, 0, fmt.Errorf("%s takes %d arguments after the flags: %w", name, want+1, errUsage)
	}
	timeout, err = time.ParseDuration(fs.Arg(want))
	if err != nil {
		return 0, nil, 0, fmt.Errorf("%s: timeout: %v: %w", name, err, errUsage)
	}
	return pid, fs.Args()[:want], timeout, nil
}

// apiserverReady runs "ready [-pid PID] URL CAFILE TOKEN TIMEOUT".
func apiserverReady(args []string) error {
	pid, pos, timeout, err := parseWait("ready", args, 3)
	if err != nil {
		return err
	}
	return waitFor("kube-apiserver", pid, timeout, apiserverProbe(pos[0], pos[1], pos[2]))
}

// apiserverProbe asks url's /readyz with token, trusting only caFile,
// which may not exist yet.
func apiserverProbe(url, caFile, token string) probe {
	url = strings.TrimSuffix(url, "/")
	return func(ctx context.Context) error {
		client, err := tlsClient(caFile)
		if err != nil {
			return err
		}
		body, err := get(ctx, client, url+"/readyz", token)
		if err != nil {
			return err
		}
		if string(bytes.TrimSpace(body)) != "ok" {
			return fmt.Errorf("/readyz answered %q", body)
		}
		return nil
	}
}

// etcdReady runs "etcd-ready [-pid PID] URL TIMEOUT".
func etcdReady(args []string) error {
	pid, pos, timeout, err := parseWait("etcd-ready", args, 1)
	if err != nil {
		return err
	}
	return waitFor("etcd", pid, timeout, etcdProbe(pos[0]))
}

// etcdProbe asks url's /health whether etcd is healthy.
func etcdProbe(url string) probe {
	url = strings.TrimSuffix(url, "/")
	return func(ctx context.Context) error {
		body, err := get(ctx, http.DefaultClient, url+"/health", "")
		if err != nil {
			return err
		}
		if !bytes.Contains(body, []byte(`"health":"true"`)) {
			return fmt.Errorf("/health answered %q", body)
		}
		return nil
	}
}

// waitFor runs ready every pollInterval until it succeeds, the timeout
// passes, or process pid (when not 0) has exited.
func waitFor(what string, pid int, timeout time.Duration, ready probe) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		err := ready(ctx)
		if err == nil {
			return nil
		}
		if pid != 0 && !alive(pid) {
			return fmt.Errorf("%s (pid %d) exited before it was ready; last answer: %w", what, pid, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready within %v: %w", what, timeout, err)
		case <-tick.C:
		}
	}
}

// tlsClient trusts only the certificates in caFile.
func tlsClient(caFile string) (*http.Client, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("reading the CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no certificate in %s", caFile)
	}
	// A client is built per probe; keep-alives off so none leaves a
	// connection behind.
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true}
	return &http.Client{Transport: tr}, nil
}

// get GETs url (with a bearer token unless it is empty) within five
// seconds and returns the body of a 200 answer.
func get(ctx context.Context, client *http.Client, url, token string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s: %s", url, resp.Status, bytes.TrimSpace(body))
	}
	return body, nil
}

// alive reports whether process pid exists and is not a zombie (a server
// whose parent exited is reaped by whoever adopted it, which may be slow
// or never in a container).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		// Gone since the signal, or a system without /proc.
		_, noProc := os.Stat("/proc/self")
		return noProc != nil
	}
	// The state follows the command name, which is in parentheses.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}
