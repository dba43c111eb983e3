package main

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestPortsAreDistinctAndOutsideTheEphemeralRange(t *testing.T) {
	var out bytes.Buffer
	if err := printPorts(&out, "5"); err != nil {
		t.Fatal(err)
	}
	ports := strings.Fields(out.String())
	seen := map[string]bool{}
	for _, p := range ports {
		seen[p] = true
	}
	if len(ports) != 5 || len(seen) != 5 {
		t.Fatalf("ports %q: want 5 distinct", ports)
	}
	lo, hi, err := ephemeralRange(ephemeralRangeFile)
	if err != nil {
		t.Skipf("no ephemeral range to check against: %v", err)
	}
	for _, s := range ports {
		p, _ := strconv.Atoi(s)
		if p >= lo && p <= hi || p < serverPortFloor {
			t.Errorf("port %d: want one outside the ephemeral range %d-%d, from %d up", p, lo, hi, serverPortFloor)
		}
	}
}

func TestServerRanges(t *testing.T) {
	for _, c := range []struct {
		lo, hi int
		want   []portSpan
	}{
		{32768, 60999, []portSpan{{10000, 32767}, {61000, 65535}}},
		{1024, 65535, nil},
		{5000, 20000, []portSpan{{20001, 65535}}},
		{10001, 65535, []portSpan{{10000, 10000}}},
	} {
		if got := serverRanges(c.lo, c.hi); !reflect.DeepEqual(got, c.want) {
			t.Errorf("serverRanges(%d, %d) = %v, want %v", c.lo, c.hi, got, c.want)
		}
	}
}

func TestPickPortsPassesOverTakenPorts(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	lo := max(taken-50, 1024)
	spans := []portSpan{{lo, lo + 99}}
	// The first draws fall on the taken port, then on the ports after it.
	draws := []int{taken - lo, taken - lo, (taken - lo + 1) % 100, (taken - lo + 2) % 100}
	i := 0
	intN := func(k int) int {
		if k != 100 {
			t.Fatalf("drawing from %d ports, want 100", k)
		}
		d := draws[min(i, len(draws)-1)]
		i++
		return d
	}
	got, err := pickPorts(1, spans, intN)
	if err != nil {
		t.Skipf("the ports after %d are taken too: %v", taken, err)
	}
	if len(got) != 1 || got[0] == taken || i < 3 {
		t.Fatalf("pickPorts = %v after %d draws; want one port other than the taken %d, drawn third or later", got, i, taken)
	}
}

func TestPickPortsRefusesTooFewPorts(t *testing.T) {
	if _, err := pickPorts(2, []portSpan{{20000, 20150}}, func(int) int { return 0 }); err == nil {
		t.Fatal("pickPorts from 151 ports for 2 servers: want an error")
	}
}

func TestEphemeralRangeRejectsGarbage(t *testing.T) {
	dir := t.TempDir()
	for _, text := range []string{"", "32768", "a b", "60999 32768", "0 5", "1 70000", "1 2 3"} {
		path := filepath.Join(dir, "range")
		if err := os.WriteFile(path, []byte(text+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if lo, hi, err := ephemeralRange(path); err == nil {
			t.Errorf("ephemeralRange(%q) = %d, %d; want an error", text, lo, hi)
		}
	}
	if _, _, err := ephemeralRange(filepath.Join(dir, "missing")); err == nil {
		t.Error("ephemeralRange of a missing file: want an error")
	}
}
