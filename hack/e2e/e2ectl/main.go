// Command e2ectl does the few jobs hack/e2e/cluster.sh needs that a fresh
// machine may have no tool for (no openssl, no curl): it writes the
// service-account key pair, picks free loopback ports and waits until etcd
// or kube-apiserver is ready. It uses the standard library only.
//
//	e2ectl keys DIR
//	    writes DIR/sa.key (RSA private key, PKCS #1 PEM) and DIR/sa.pub
//	    (its public key, PKIX PEM), both mode 0600
//	e2ectl ports N
//	    prints N distinct loopback TCP ports, free a moment ago and outside
//	    the kernel's ephemeral range where it is known, on one line
//	e2ectl ready [-pid PID] URL CAFILE TOKEN TIMEOUT
//	    polls URL/readyz with the bearer TOKEN, trusting only the
//	    certificates in CAFILE (kube-apiserver writes it as it starts, so a
//	    missing file is waited for), until it answers 200
//	e2ectl etcd-ready [-pid PID] URL TIMEOUT
//	    polls URL/health until etcd reports itself healthy
//
// TIMEOUT is a Go duration ("90s"). With -pid, waiting ends with an error
// as soon as that process has exited. The exit status is 0 on success, 1
// on failure and 2 on a usage error.
package main

import (
	"errors"
	"fmt"
	"os"
)

// errUsage marks a command line e2ectl does not understand.
var errUsage = errors.New("usage: e2ectl keys DIR | ports N | ready [-pid PID] URL CAFILE TOKEN TIMEOUT | etcd-ready [-pid PID] URL TIMEOUT")

func main() {
	err := run(os.Args[1:])
	switch {
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "e2ectl:", err)
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "e2ectl:", err)
		os.Exit(1)
	}
}

// run dispatches one subcommand.
func run(args []string) error {
	if len(args) == 0 {
		return errUsage
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "keys":
		if len(rest) != 1 {
			return errUsage
		}
		return writeKeys(rest[0])
	case "ports":
		if len(rest) != 1 {
			return errUsage
		}
		return printPorts(os.Stdout, rest[0])
	case "ready":
		return apiserverReady(rest)
	case "etcd-ready":
		return etcdReady(rest)
	}
	return fmt.Errorf("unknown command %q: %w", cmd, errUsage)
}
