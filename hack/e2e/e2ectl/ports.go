package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// ephemeralRangeFile holds the range Linux takes the local ports of
// outgoing connections from.
const ephemeralRangeFile = "/proc/sys/net/ipv4/ip_local_port_range"

// serverPortFloor is the lowest port handed to a server.
const serverPortFloor = 10000

// printPorts writes count distinct loopback ports to w, each free a moment
// ago. The ports lie outside the kernel's ephemeral range where it is
// known: a server restarted on its port (the suite SIGKILLs and restarts
// kube-apiserver and etcd) must find it free, and a port from that range
// can be taken meanwhile as the local end of any outgoing connection,
// which makes the restart fail with "address already in use".
func printPorts(w io.Writer, count string) error {
	n, err := strconv.Atoi(count)
	if err != nil || n < 1 {
		return fmt.Errorf("port count %q is not a positive number: %w", count, errUsage)
	}
	lo, hi, err := ephemeralRange(ephemeralRangeFile)
	var ports []int
	if err == nil {
		ports, err = pickPorts(n, serverRanges(lo, hi), rand.IntN)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2ectl: %v; taking ports the kernel picks\n", err)
		ports, err = kernelPorts(n)
	}
	if err != nil {
		return err
	}
	out := make([]string, len(ports))
	for i, p := range ports {
		out[i] = strconv.Itoa(p)
	}
	_, err = fmt.Fprintln(w, strings.Join(out, " "))
	return err
}

// portSpan is the ports from lo to hi, both included.
type portSpan struct{ lo, hi int }

// serverRanges returns the spans of ports above serverPortFloor that lie
// outside the ephemeral range lo-hi.
func serverRanges(lo, hi int) []portSpan {
	var spans []portSpan
	if lo-1 >= serverPortFloor {
		spans = append(spans, portSpan{serverPortFloor, lo - 1})
	}
	if hi+1 <= 65535 {
		spans = append(spans, portSpan{max(hi+1, serverPortFloor), 65535})
	}
	return spans
}

// ephemeralRange reads the kernel's ephemeral port range from path.
func ephemeralRange(path string) (lo, hi int, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, fmt.Errorf("reading the ephemeral port range: %w", err)
	}
	f := strings.Fields(string(b))
	if len(f) == 2 {
		lo, err = strconv.Atoi(f[0])
		if err == nil {
			hi, err = strconv.Atoi(f[1])
		}
	}
	if len(f) != 2 || err != nil || lo < 1 || hi < lo || hi > 65535 {
		return 0, 0, fmt.Errorf("ephemeral port range %q in %s is not two ports", strings.TrimSpace(string(b)), path)
	}
	return lo, hi, nil
}

// pickPorts chooses n distinct free ports at random from spans, holding
// each open until all are chosen. intN(k) returns a number in [0, k).
func pickPorts(n int, spans []portSpan, intN func(int) int) ([]int, error) {
	total := 0
	for _, s := range spans {
		total += s.hi - s.lo + 1
	}
	if total < 100*n {
		return nil, fmt.Errorf("only %d ports lie outside the ephemeral range", total)
	}
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n && tries < 100*n; tries++ {
		p := nth(spans, intN(total))
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue // taken, or chosen already: its listener is open
		}
		defer l.Close()
		ports = append(ports, p)
	}
	if len(ports) < n {
		return nil, fmt.Errorf("found %d free ports of %d outside the ephemeral range", len(ports), n)
	}
	return ports, nil
}

// nth returns the i-th port of spans, counting from 0.
func nth(spans []portSpan, i int) int {
	for _, s := range spans {
		if i <= s.hi-s.lo {
			return s.lo + i
		}
		i -= s.hi - s.lo + 1
	}
	panic("nth: index beyond the spans")
}

// kernelPorts returns n distinct ports the kernel chose, all listeners
// held open until every port is chosen.
func kernelPorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
