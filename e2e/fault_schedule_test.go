//go:build e2e

package e2e

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
)

// The fault schedule: Reflectors on a real kube-apiserver through one
// proxy, each on a connection of its own, while a writer changes a
// ConfigMap 20 times a second, through connection resets, refused
// connections, a compaction, a kube-apiserver crash, an etcd restart and
// black-holes of 20, 40, 65 and 75 s, each fault followed by 15 s of calm.
// Every 100 ms each store's lag (writes the server acknowledged that the
// store does not hold yet) and each of our Reflectors' health are
// sampled:
//
//   - health lies while it says Synced and the store is more than 20
//     writes behind;
//   - a false alarm is Degraded more than settle after a fault ended;
//   - after each fault, how long until the store held the last write made
//     before the fault ended, against client-go's Reflector with the same
//     HTTP/2 settings.
//
// Ours runs at four settings: client-go's transport defaults; the
// recommended HTTP/2 health check of 5 + 5 s; quiet checks after 1 s with
// a 1 s timeout and a HealthGrace of 2 s; and after 1 s with a 0.5 s
// timeout and a grace of 1.5 s. Nothing may be lost, there may be no false
// alarm, and no store of ours may be current again more than 2 s after
// client-go's. At the defaults a black-hole longer than the transport's
// bound (30 + 15 s) must turn Degraded within 1 s of it; with the
// recommended settings within 10.5 s; with quiet checks within half a
// second of the grace period. With the tightest quiet checks health may
// lie 5 s in all.
func TestHealthFaultSchedule(t *testing.T) {
	testCluster.restoreCluster(t)
	admin := client(t, testCluster.admin)
	ns := namespace(t, admin)
	p := newBlackholeProxy(t, hostPort(t, testCluster.admin.Host))
	w := startTickerWriter(t, admin, ns, 50*time.Millisecond)
	defer w.stop()
	subjects := []*faultSubject{
		ours(t, p, ns, "ours, defaults", "", "", cache.ReflectorOptions{}),
		ours(t, p, ns, "ours, HTTP/2 5+5 s", "5", "5", cache.ReflectorOptions{}),
		ours(t, p, ns, "ours, quiet 1+1 s, grace 2 s", "", "",
			cache.ReflectorOptions{QuietCheckAfter: time.Second, QuietCheckTimeout: time.Second, HealthGrace: 2 * time.Second}),
		ours(t, p, ns, "ours, quiet 1+0.5 s, grace 1.5 s", "", "",
			cache.ReflectorOptions{QuietCheckAfter: time.Second, QuietCheckTimeout: time.Second / 2, HealthGrace: 3 * time.Second / 2}),
		theirs(t, p, ns, "client-go, defaults", "", ""),
		theirs(t, p, ns, "client-go, HTTP/2 5+5 s", "5", "5"),
	}
	for _, s := range subjects {
		s.awaitCurrent(t, w)
	}
	faults := faultSchedule(t, p)
	sm := newScheduleSampler(w, subjects, len(faults))
	sm.run()
	for i, f := range faults {
		sm.began(i)
		f.do()
		sm.ended()
		time.Sleep(15 * time.Second)
	}
	sm.stop()
	w.stop()
	for _, s := range subjects {
		awaitStoreEqual(t, admin, ns, s.store)
	}
	reportSchedule(t, faults, subjects)
	checkSchedule(t, faults, subjects)
}

// settle is how long after a fault ended Degraded may still be reported.
const settle = 10 * time.Second

// fault is one step of the schedule: do brings it about and returns when
// it is over; hole is a black-hole's length (zero for other faults).
type fault struct {
	name string
	hole time.Duration
	do   func()
}

func faultSchedule(t *testing.T, p *blackholeProxy) []fault {
	sleepFor := func(d time.Duration) func() { return func() { time.Sleep(d) } }
	hole := func(d time.Duration) fault {
		return fault{name: fmt.Sprintf("black-hole %v", d), hole: d, do: func() { p.BlackHole(d); time.Sleep(d) }}
	}
	return []fault{
		{name: "reset", do: p.Reset},
		{name: "reset", do: p.Reset},
		{name: "refused 5 s", do: func() { p.Refuse(5 * time.Second); sleepFor(5 * time.Second)() }},
		{name: "compaction, reset", do: func() { testCluster.compactEtcd(t); p.Reset() }},
		{name: "kube-apiserver SIGKILL", do: func() {
			testCluster.killServer(t, apiServer)
			testCluster.startServer(t, apiServer)
		}},
		{name: "etcd restart", do: func() {
			testCluster.stopServer(t, etcdServer)
			testCluster.startServer(t, etcdServer)
			testCluster.startServer(t, apiServer)
		}},
		hole(20 * time.Second), hole(40 * time.Second), hole(65 * time.Second), hole(75 * time.Second),
	}
}

// faultSubject is one Reflector on the schedule and what was measured of
// it. health is nil for client-go's, which has none.
type faultSubject struct {
	name   string
	store  cache.Store
	health func() cache.Health
	// like names the client-go subject with the same HTTP/2 settings.
	like string
	// lie and alarm add up the time health lied and alarmed falsely;
	// degraded is, per fault, how long after it began health first said
	// Degraded, and current how long after it ended the store was current
	// (-1: never).
	lie, alarm        time.Duration
	degraded, current []time.Duration
}

// proxied returns a client through p whose transport has the HTTP/2
// health check settings idle and ping ("" for client-go's defaults).
func proxied(t *testing.T, p *blackholeProxy, idle, ping string) *kubernetes.Clientset {
	t.Setenv("HTTP2_READ_IDLE_TIMEOUT_SECONDS", idle)
	t.Setenv("HTTP2_PING_TIMEOUT_SECONDS", ping)
	cfg := rest.CopyConfig(testCluster.admin)
	cfg.Host = "https://" + p.Addr()
	// A Dial of its own makes the transport uncached: built now, with the
	// settings just set, and used by this client alone.
	cfg.Dial = (&net.Dialer{}).DialContext
	return client(t, cfg)
}

func ours(t *testing.T, p *blackholeProxy, ns, name, idle, ping string, o cache.ReflectorOptions) *faultSubject {
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	o.Name = name
	r := cache.NewReflectorWithOptions(configMapsLW(proxied(t, p, idle, ping), ns), &corev1.ConfigMap{}, store, o)
	runReflector(t, r)
	like := "client-go, defaults"
	if idle != "" {
		like = "client-go, HTTP/2 5+5 s"
	}
	return &faultSubject{name: name, store: store, health: r.Health, like: like}
}

func theirs(t *testing.T, p *blackholeProxy, ns, name, idle, ping string) *faultSubject {
	store := clientgocache.NewStore(clientgocache.MetaNamespaceKeyFunc)
	r := clientgocache.NewReflectorWithOptions(configMapsLW(proxied(t, p, idle, ping), ns), &corev1.ConfigMap{}, store,
		clientgocache.ReflectorOptions{Name: name})
	runClientGoReflector(t, r)
	return &faultSubject{name: name, store: store}
}

// awaitCurrent waits up to a minute for s's store to hold the writer's
// latest write, and our Reflector to say Synced.
func (s *faultSubject) awaitCurrent(t *testing.T, w *tickerWriter) {
	t.Helper()
	for end := time.Now().Add(minute); ; time.Sleep(100 * time.Millisecond) {
		synced := s.health == nil || s.health().State == cache.Synced
		if synced && tickerN(s.store) >= w.last()-1 {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s: not current a minute after it started", s.name)
		}
	}
}

// tickerN is the n of the ticker s holds, -1 if none.
func tickerN(s cache.Store) int {
	for _, obj := range s.List() {
		if cm := obj.(*corev1.ConfigMap); cm.Name == "ticker" {
			if n, err := strconv.Atoi(cm.Data["n"]); err == nil {
				return n
			}
		}
	}
	return -1
}

// tickerWriter updates the ConfigMap "ticker" with n = 0, 1, 2, … every
// period, and knows the last n the server acknowledged.
type tickerWriter struct {
	acked atomic.Int64
	stop  func()
}

func startTickerWriter(t *testing.T, cs *kubernetes.Clientset, ns string, period time.Duration) *tickerWriter {
	w := &tickerWriter{}
	w.acked.Store(-1)
	cm, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ticker"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() {
		tick := time.NewTicker(period)
		defer tick.Stop()
		for n := 0; ; {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			cm.Data = map[string]string{"n": strconv.Itoa(n)}
			out, err := cs.CoreV1().ConfigMaps(ns).Update(t.Context(), cm, metav1.UpdateOptions{})
			if err != nil {
				// A conflict after an unanswered update that took effect:
				// start again from the server's copy.
				if cur, gerr := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), "ticker", metav1.GetOptions{}); gerr == nil {
					cm = cur
				}
				continue
			}
			cm = out
			w.acked.Store(int64(n))
			n++
		}
	})
	var once sync.Once
	w.stop = func() { once.Do(func() { close(done) }); wg.Wait() }
	t.Cleanup(w.stop)
	return w
}

// last is the last n the server acknowledged.
func (w *tickerWriter) last() int { return int(w.acked.Load()) }

// reportSchedule logs, per subject, its lies, false alarms, and per fault
// when it turned Degraded and when its store was current again.
func reportSchedule(t *testing.T, faults []fault, subjects []*faultSubject) {
	var b strings.Builder
	fmt.Fprintf(&b, "%-32s %9s %9s", "", "lied", "alarmed")
	for _, f := range faults {
		fmt.Fprintf(&b, " | %s", f.name)
	}
	for _, s := range subjects {
		fmt.Fprintf(&b, "\n%-32s %9v %9v", s.name, s.lie.Round(100*time.Millisecond), s.alarm.Round(100*time.Millisecond))
		for i := range faults {
			fmt.Fprintf(&b, " | Degraded %s, current %s", seconds(s.degraded[i]), seconds(s.current[i]))
		}
	}
	t.Logf("fault schedule (Degraded: after the fault began; current: after it ended):\n%s", b.String())
}

// seconds formats a measured delay, "-" for never.
func seconds(d time.Duration) string {
	if d < 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// checkSchedule asserts what the schedule must show (see
// TestHealthFaultSchedule).
func checkSchedule(t *testing.T, faults []fault, subjects []*faultSubject) {
	byName := map[string]*faultSubject{}
	for _, s := range subjects {
		byName[s.name] = s
	}
	for _, s := range subjects {
		if s.health == nil {
			continue
		}
		if s.alarm > 0 {
			t.Errorf("%s: Degraded for %v while no fault was on", s.name, s.alarm)
		}
		if strings.Contains(s.name, "grace 1.5 s") && s.lie > 5*time.Second {
			t.Errorf("%s: health lied %v in all, want at most 5 s", s.name, s.lie)
		}
		like := byName[s.like]
		for i, f := range faults {
			if s.current[i] < 0 || (like.current[i] >= 0 && s.current[i] > like.current[i]+2*time.Second) {
				t.Errorf("%s: current %s after %s ended, %s %s", s.name, seconds(s.current[i]), f.name, like.name, seconds(like.current[i]))
			}
			checkHole(t, s, i, f)
		}
	}
}

// checkHole asserts when a black-hole turned s Degraded.
func checkHole(t *testing.T, s *faultSubject, i int, f fault) {
	lo, hi := time.Duration(-1), time.Duration(-1)
	switch {
	case f.hole == 0:
		return
	case strings.Contains(s.name, "defaults") && f.hole > 46*time.Second:
		lo, hi = 44*time.Second, 46*time.Second
	case strings.Contains(s.name, "5+5"):
		lo, hi = 0, 10500*time.Millisecond
	case strings.Contains(s.name, "grace 2 s"):
		lo, hi = 0, 2500*time.Millisecond
	case strings.Contains(s.name, "grace 1.5 s"):
		lo, hi = 0, 2*time.Second
	}
	if hi >= 0 && (s.degraded[i] < lo || s.degraded[i] > hi) {
		t.Errorf("%s: Degraded %s into the %s, want %v-%v", s.name, seconds(s.degraded[i]), f.name, lo, hi)
	}
}

// scheduleSampler samples every subject every 100 ms while the schedule
// runs, knowing which fault is on or last ended.
type scheduleSampler struct {
	w        *tickerWriter
	subjects []*faultSubject
	done     chan struct{}
	wg       sync.WaitGroup

	mu sync.Mutex
	// i is the fault on or last ended (-1 before the first); start and
	// end are its times (end zero while it is on), target the writer's
	// last acknowledged write when it ended.
	i          int
	start, end time.Time
	target     int
}

func newScheduleSampler(w *tickerWriter, subjects []*faultSubject, faults int) *scheduleSampler {
	for _, s := range subjects {
		s.degraded, s.current = make([]time.Duration, faults), make([]time.Duration, faults)
		for i := range faults {
			s.degraded[i], s.current[i] = -1, -1
		}
	}
	return &scheduleSampler{w: w, subjects: subjects, done: make(chan struct{}), i: -1}
}

func (sm *scheduleSampler) began(i int) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	sm.i, sm.start, sm.end = i, time.Now(), time.Time{}
}

func (sm *scheduleSampler) ended() {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	sm.end, sm.target = time.Now(), sm.w.last()
}

func (sm *scheduleSampler) run() {
	sm.wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		last := time.Now()
		for {
			select {
			case <-sm.done:
				return
			case now := <-tick.C:
				sm.sample(now, now.Sub(last))
				last = now
			}
		}
	})
}

func (sm *scheduleSampler) stop() { close(sm.done); sm.wg.Wait() }

// sample records one sample taken at now, standing for the time dt
// since the last one.
func (sm *scheduleSampler) sample(now time.Time, dt time.Duration) {
	sm.mu.Lock()
	i, start, end, target := sm.i, sm.start, sm.end, sm.target
	sm.mu.Unlock()
	acked := sm.w.last()
	// A fault counts as on from its start until settle after its end.
	on := i >= 0 && (end.IsZero() || now.Before(end.Add(settle)))
	for _, s := range sm.subjects {
		n := tickerN(s.store)
		if i >= 0 && !end.IsZero() && s.current[i] < 0 && n >= target {
			s.current[i] = now.Sub(end)
		}
		if s.health == nil {
			continue
		}
		switch s.health().State {
		case cache.Synced:
			if acked-n > 20 {
				s.lie += dt
			}
		case cache.Degraded:
			if on && s.degraded[i] < 0 {
				s.degraded[i] = now.Sub(start)
			}
			if !on {
				s.alarm += dt
			}
		}
	}
}
