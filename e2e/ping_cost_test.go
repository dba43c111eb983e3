//go:build e2e

package e2e

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache"
)

// What client-go's HTTP/2 health check costs on a quiet connection, the
// figure the health contract recommends its settings by: one Reflector
// per setting, each with a client (and so a connection) of its own,
// watching a namespace nobody writes to. For a minute, every write the
// client makes on its TCP connection is counted; on a quiet watch those
// are the PING frames (one TLS record each) and nothing else, except a
// flow-control update after a bookmark. At most one ping per idle period
// is expected, and at most a handful more than a minute's worth.
func TestHTTP2PingCost(t *testing.T) {
	admin := client(t, testCluster.admin)
	ns := namespace(t, admin)
	type run struct {
		name       string
		idle, ping string
		perMinute  float64 // the most pings a minute of silence can need
		conn       *writeCounter
	}
	runs := []*run{
		{name: "defaults (30 s, 15 s)", perMinute: 2},
		{name: "10 s, 5 s", idle: "10", ping: "5", perMinute: 6},
		{name: "5 s, 5 s", idle: "5", ping: "5", perMinute: 12},
	}
	var refl []*cache.Reflector
	for _, r := range runs {
		t.Setenv("HTTP2_READ_IDLE_TIMEOUT_SECONDS", r.idle)
		t.Setenv("HTTP2_PING_TIMEOUT_SECONDS", r.ping)
		r.conn = &writeCounter{}
		cfg := rest.CopyConfig(testCluster.admin)
		// A Dial of its own makes the transport uncached, so it is built
		// now, reading the settings just set.
		cfg.Dial = r.conn.dial
		refl = append(refl, cache.NewReflectorWithOptions(configMapsLW(client(t, cfg), ns), &corev1.ConfigMap{},
			cache.NewStore(cache.MetaNamespaceKeyFunc), cache.ReflectorOptions{Name: "ping-" + r.idle, UseWatchList: ptr.To(false)}))
	}
	for _, r := range refl {
		runReflector(t, r)
		mustSync(t, r)
	}
	time.Sleep(2 * time.Second)
	before := make([][2]int64, len(runs))
	for i, r := range runs {
		before[i] = r.conn.load()
	}
	time.Sleep(minute)
	for i, r := range runs {
		after := r.conn.load()
		writes, bytes := after[0]-before[i][0], after[1]-before[i][1]
		t.Logf("%-22s %d writes (%d bytes) in a minute of a quiet watch, on %d connection(s)", r.name, writes, bytes, r.conn.conns.Load())
		if float64(writes) > r.perMinute+2 {
			t.Errorf("%s: %d writes in a quiet minute, want at most about %v pings", r.name, writes, r.perMinute)
		}
		if r.idle != "" && writes < 1 {
			t.Errorf("%s: no ping in a quiet minute; the setting was not applied", r.name)
		}
	}
}

// writeCounter dials TCP connections that count what the client writes.
type writeCounter struct {
	writes, bytes, conns atomic.Int64
}

func (c *writeCounter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	c.conns.Add(1)
	return &countedConn{Conn: conn, c: c}, nil
}

// load returns the writes and bytes so far.
func (c *writeCounter) load() [2]int64 { return [2]int64{c.writes.Load(), c.bytes.Load()} }

type countedConn struct {
	net.Conn
	c *writeCounter
}

func (cc *countedConn) Write(b []byte) (int, error) {
	cc.c.writes.Add(1)
	cc.c.bytes.Add(int64(len(b)))
	return cc.Conn.Write(b)
}

// apiserverCPU returns the CPU time kube-apiserver has used so far, from
// its pid file and /proc (10 ms resolution).
func apiserverCPU(t *testing.T) time.Duration {
	t.Helper()
	pid, err := os.ReadFile(filepath.Join(testCluster.dir, apiServer+".pid"))
	if err != nil {
		t.Fatal(err)
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strings.TrimSpace(string(pid)), "stat"))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command's closing parenthesis: utime and stime
	// are the 12th and 13th of them.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// What a quiet check costs kube-apiserver: the CPU it spends per LIST of
// at most one object at RV "" (the check's request), in a namespace of 1
// ConfigMap, one of 3,000, and across namespaces, after subtracting what
// it spends idle over the same time. Not parallel, so that no other test's
// work is counted. The cost must not grow with the objects held.
func TestQuietCheckApiserverCPU(t *testing.T) {
	cs := client(t, testCluster.admin)
	small := namespace(t, cs)
	mustCreateConfigMaps(t, cs, small, 1)
	big := bulkNamespace(t, cs)
	rc := cs.CoreV1().RESTClient()
	const requests = 300
	idleFrom, idleCPU := time.Now(), apiserverCPU(t)
	time.Sleep(3 * time.Second)
	idleRate := float64(apiserverCPU(t)-idleCPU) / float64(time.Since(idleFrom))
	perRequest := map[string]time.Duration{}
	for _, c := range []struct{ name, ns string }{{"1 object", small}, {"3,000 objects", big}, {"all namespaces", ""}} {
		from, cpu := time.Now(), apiserverCPU(t)
		for range requests {
			req := rc.Get().Resource("configmaps").Param("limit", "1").Param("resourceVersion", "")
			if c.ns != "" {
				req = req.Namespace(c.ns)
			}
			if _, err := req.DoRaw(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		elapsed := time.Since(from)
		spent := apiserverCPU(t) - cpu - time.Duration(idleRate*float64(elapsed))
		perRequest[c.name] = spent / requests
		t.Logf("%-15s kube-apiserver CPU %v per quiet check (%d requests in %v; idle %.1f%% of a core subtracted)",
			c.name, perRequest[c.name].Round(time.Microsecond), requests, elapsed.Round(time.Millisecond), 100*idleRate)
	}
	if small, big := perRequest["1 object"], perRequest["3,000 objects"]; big > 3*small+500*time.Microsecond {
		t.Errorf("a quiet check costs %v of CPU among 3,000 objects, %v among 1: it grows with the objects", big, small)
	}
}
