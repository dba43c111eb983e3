//go:build e2e

package e2e

import (
	"context"
	"net"
	"net/url"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientgocache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache"
)

// A black-hole on a real kube-apiserver: our Reflector's connection goes
// through a proxy that stops every byte both ways while connections stay
// open, with a writer changing a ConfigMap 10 times a second, so the
// watch's last event came just before the black-hole began. Nothing tells
// the Reflector of the dead connection but client-go's HTTP/2 health
// check (HTTP2_READ_IDLE_TIMEOUT_SECONDS of silence, then an unanswered
// ping for HTTP2_PING_TIMEOUT_SECONDS), or, if on, our quiet check. Health
// must be Degraded within 1 s of that bound at the defaults (30 + 15 s;
// the loss is dated from the last event), within 10 s with the
// recommended 5 + 5 s, and within 10 s with quiet checks (5 s, 3 s
// timeout) at the HTTP/2 defaults; and Synced before the black-hole, with
// the store equal to the server's after it. client-go's Reflector runs
// beside it through the same proxy (a connection of its own): once the
// black-hole ends, our store must be current again no more than 2 s after
// client-go's.
func TestHealthThroughBlackHole(t *testing.T) {
	for _, tc := range []struct {
		name       string
		idle, ping string
		quiet      time.Duration
		hole       time.Duration
		lo, hi     time.Duration
	}{
		{name: "HTTP/2 defaults", hole: 55 * time.Second, lo: 44 * time.Second, hi: 46 * time.Second},
		{name: "HTTP/2 5 and 5 s", idle: "5", ping: "5", hole: 25 * time.Second, lo: 9 * time.Second, hi: 10500 * time.Millisecond},
		{name: "quiet check 5 s", quiet: 5 * time.Second, hole: 25 * time.Second, lo: 9 * time.Second, hi: 10500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("HTTP2_READ_IDLE_TIMEOUT_SECONDS", tc.idle)
			t.Setenv("HTTP2_PING_TIMEOUT_SECONDS", tc.ping)
			degradedIn := runBlackHole(t, tc.hole, tc.quiet)
			t.Logf("%s: Degraded %v after the black-hole began (want %v-%v)", tc.name, degradedIn.Round(10*time.Millisecond), tc.lo, tc.hi)
			if degradedIn < tc.lo || degradedIn > tc.hi {
				t.Fatalf("Degraded %v into the black-hole, want %v-%v", degradedIn, tc.lo, tc.hi)
			}
		})
	}
}

// runBlackHole runs one black-hole of d and returns how long after it
// began health turned Degraded.
func runBlackHole(t *testing.T, d, quiet time.Duration) time.Duration {
	admin := client(t, testCluster.admin)
	ns := namespace(t, admin)
	p := newBlackholeProxy(t, hostPort(t, testCluster.admin.Host))
	cfg := rest.CopyConfig(testCluster.admin)
	cfg.Host = "https://" + p.Addr()
	// A Dial of its own makes the transport uncached, so it is built now,
	// reading the HTTP/2 settings this test set.
	cfg.Dial = (&net.Dialer{}).DialContext
	var hl healthLog
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	r := cache.NewReflectorWithOptions(configMapsLW(client(t, cfg), ns), &corev1.ConfigMap{}, store, cache.ReflectorOptions{
		Name: "blackhole", UseWatchList: ptr.To(false), OnHealthChange: hl.record,
		QuietCheckAfter: quiet, QuietCheckTimeout: 3 * time.Second,
	})
	// client-go's Reflector beside it, through the same proxy on a
	// connection of its own (another client), with the same settings.
	theirCfg := rest.CopyConfig(cfg)
	theirCfg.Dial = (&net.Dialer{}).DialContext
	theirStore := clientgocache.NewStore(clientgocache.MetaNamespaceKeyFunc)
	theirs := clientgocache.NewReflectorWithOptions(configMapsLW(client(t, theirCfg), ns), &corev1.ConfigMap{}, theirStore,
		clientgocache.ReflectorOptions{Name: "blackhole-client-go"})
	stopWriter := startTickerWriter(t, admin, ns, 100*time.Millisecond).stop
	defer stopWriter()
	runReflector(t, r)
	runClientGoReflector(t, theirs)
	mustSync(t, r)
	time.Sleep(3 * time.Second)
	if h := r.Health(); h.State != cache.Synced {
		t.Fatalf("health %+v before the black-hole", h)
	}
	from := hl.mark()
	start := time.Now()
	p.BlackHole(d)
	ctx, cancel := context.WithTimeout(t.Context(), d+minute)
	defer cancel()
	h, err := hl.waitFor(ctx, from, func(h cache.Health) bool { return h.State == cache.Degraded })
	if err != nil {
		t.Fatalf("never Degraded: %v", err)
	}
	in := h.Since.Sub(start)
	t.Logf("Degraded(%s): %v", h.Reason, h.LastError)
	ours, theirsIn := catchUp(ctx, t, admin, ns, start.Add(d), store, theirStore)
	t.Logf("after the black-hole ended: our store current again in %v, client-go's in %v", ours.Round(10*time.Millisecond), theirsIn.Round(10*time.Millisecond))
	if ours > theirsIn+2*time.Second {
		t.Errorf("our store caught up %v after the black-hole, client-go's %v", ours, theirsIn)
	}
	if _, err := hl.waitFor(ctx, from, func(h cache.Health) bool { return h.State == cache.Synced }); err != nil {
		t.Fatalf("not Synced again after the black-hole: %v", err)
	}
	stopWriter()
	awaitStoreEqual(t, admin, ns, store)
	return in
}

// catchUp waits for the black-hole to end at end, reads the ticker the
// writer changes, and returns how long after end each of two stores held
// that version of it or a later one (both polled every 50 ms).
func catchUp(ctx context.Context, t *testing.T, cs *kubernetes.Clientset, ns string, end time.Time, stores ...cache.Store) (time.Duration, time.Duration) {
	t.Helper()
	time.Sleep(time.Until(end))
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "ticker", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := strconv.Atoi(cm.Data["n"])
	took := make([]time.Duration, len(stores))
	for left := len(stores); left > 0; time.Sleep(50 * time.Millisecond) {
		if ctx.Err() != nil {
			t.Fatalf("a store never caught up with the ticker's n=%d (times so far %v)", want, took)
		}
		for i, s := range stores {
			if took[i] == 0 && tickerN(s) >= want {
				took[i], left = time.Since(end), left-1
			}
		}
	}
	return took[0], took[1]
}

// hostPort is the host:port of a server URL.
func hostPort(t *testing.T, host string) string {
	u, err := url.Parse(host)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// awaitStoreEqual waits up to a minute for store to hold what the server
// lists of the ConfigMaps in ns, then asserts it does.
func awaitStoreEqual(t *testing.T, cs *kubernetes.Clientset, ns string, store cache.Store) {
	t.Helper()
	for end := time.Now().Add(minute); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		want, err := serverList(t.Context(), cs, "configmaps", ns)
		if err != nil {
			t.Fatal(err)
		}
		w, _ := stateOf(want)
		g, _ := stateOf(store.List())
		if len(diff(w, g)) == 0 {
			break
		}
	}
	assertMatchesServer(t, cs, "configmaps", ns, "our store", store.List())
}
