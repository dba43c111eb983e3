//go:build e2e

package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// The elastic ring's settings for the runs that move fast: lease 6 s,
// renew deadline 4 s, retry 1 s (the defaults, 15 s / 10 s / 2 s, are
// used by the run on the ungated server).
var shortLease = []string{"--lease-duration=6s", "--renew-deadline=4s", "--retry-period=1s"}

const (
	elasticObjects   = 2000
	elasticChurnRate = 25 // writes a second
	// hold is how long each steady state lasts, under churn.
	hold = 3 * time.Second
	// holeForDefaults is how long the black-hole of the run at the
	// default settings lasts: longer than the 15 s lease. (The gated
	// run's pause and black-hole last past twice its lease: holdFault.)
	holeForDefaults = 20 * time.Second
)

// TestElasticRing runs replicas of a controller as separate processes
// (hack/e2e/elasticreplica) over 2,000 ConfigMaps under a churn of 25 writes a
// second, and compares, from their logs on one wall clock:
//
//   - elastic, gate on (lease 6 s / renew 4 s / retry 1 s): 3 replicas, 2
//     join (5), 3 leave on SIGTERM (2), 1 joins (3), 1 is SIGKILLed (2),
//     one's connection is black-holed (1) and then one is stopped
//     (SIGSTOP, 1), each past twice the lease and until the other has
//     deleted its Lease, and each must come back (2); then a rolling
//     restart replaces both, one at a time with a surge of one (3, 2);
//   - elastic, gate off (the ungated kube-apiserver: every replica
//     receives everything and filters locally), at the default lease
//     settings 15 s / 10 s / 2 s: 3, 2 join (5), 1 SIGKILLed (4), 2 leave
//     on SIGTERM (2), one's connection black-holed for 20 s (1) and back
//     (2);
//   - static i-of-n (cache.ReplicaShard), gate on: 3 replicas, rolled out
//     one by one (as a StatefulSet's RollingUpdate does: highest ordinal
//     first, each stopped, started with the new n, and synced before the
//     next) to 5, then to 2.
//
// It prints one table (figureHeader) and asserts the elastic ring's goals
// on both elastic runs: no object handled by two replicas at once, at most
// 5 s without a handler after a graceful change and lease + 5 s after a
// SIGKILL, black-hole or SIGSTOP, movement at most 1.25 × the ideal, the
// caches' union equal to a LIST at quiesce; and, with the gate on, each
// replica's share 1/n ± 5 points. A second table (exactHeader) compares
// every handler call with every write of the churn (checked against the
// test's own watch); on the gated run it asserts no call out of order
// within a replica, no write never handled, the last handled state of
// every object the server's at quiesce, and every replica back after its
// fault.
func TestElasticRing(t *testing.T) {
	began := time.Now()
	cs := client(t, testCluster.admin)
	ns := namespace(t, cs)
	bin := buildReplica(t)
	mustCreateConfigMaps(t, cs, ns, elasticObjects)
	objs := baseObjects(t, cs, ns)
	t.Logf("%d ConfigMaps created in %v", len(objs), time.Since(began).Round(time.Millisecond))
	ref := startRefWatch(t, cs, ns)
	churn := startCMChurn(cs, ns, elasticObjects, elasticChurnRate)
	token, ca := testCluster.env["ADMIN_TOKEN"], testCluster.env["CA_FILE"]
	common := func() []string {
		return []string{"--namespace", ns, "--lease-namespace", ns, "--token", token, "--ca", ca}
	}

	gated := runElasticGated(t, newFleet(t, "gated", bin, testCluster.admin.Host, append(common(), append([]string{"--mode=elastic", "--ring=gated"}, shortLease...)...)...), churn, cs, ns)
	ungatedHost := testCluster.ungated(t).Host
	ungated := runElasticUngated(t, newFleet(t, "ungated", bin, ungatedHost, append(common(), "--mode=elastic", "--ring=ungated")...), churn, cs, ns)
	static := runStatic(t, newFleet(t, "static", bin, testCluster.admin.Host, append(common(), "--mode=static")...), churn, cs, ns)
	churn.finish(t)
	exact := reportExact(t, []*ringRun{gated, ungated, static}, churn.log(), ref)

	rows := []string{figureHeader}
	var elastic []figures
	for i, r := range []*ringRun{gated, ungated, static} {
		fg := r.figures(t, objs)
		if i < 2 {
			elastic = append(elastic, fg)
		}
		rows = append(rows, figureRow(r, fg))
	}
	t.Logf("%d base ConfigMaps, churn %.1f writes/s (merge-patches 80%%, creates 10%%, deletes 10%%), whole test %v:\n%s",
		len(objs), churn.rate(), time.Since(began).Round(time.Second), strings.Join(rows, "\n"))
	for _, r := range []*ringRun{gated, ungated, static} {
		t.Logf("%s: changes %s", r.name, r.timeline())
	}
	if churn.rate() < 20 {
		t.Errorf("the churn reached %.1f writes/s, want ≥ 20", churn.rate())
	}
	checkGoals(t, gated, elastic[0], true)
	checkGoals(t, ungated, elastic[1], false) // filtering locally: shares follow the buckets, not the server
	checkExact(t, gated, exact[0])
}

// baseObjects lists the ConfigMaps cm-* of ns.
func baseObjects(t *testing.T, cs kubernetes.Interface, ns string) []baseObject {
	t.Helper()
	l, err := cs.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []baseObject
	for _, cm := range l.Items {
		if strings.HasPrefix(cm.Name, "cm-") {
			out = append(out, baseObject{name: cm.Name, uid: string(cm.UID), hash: uidHash(types.UID(cm.UID))})
		}
	}
	if len(out) != elasticObjects {
		t.Fatalf("listed %d ConfigMaps cm-*, want %d", len(out), elasticObjects)
	}
	return out
}

// timeline is the run's changes, in seconds from its start.
func (r *ringRun) timeline() string {
	var parts []string
	for _, c := range r.changes {
		parts = append(parts, fmt.Sprintf("%s at %.1f s", c.label, c.at.Sub(r.start).Seconds()))
	}
	return strings.Join(parts, ", ")
}

func runElasticGated(t *testing.T, f *fleet, churn *cmChurn, cs kubernetes.Interface, ns string) *ringRun {
	began := time.Now()
	r := &ringRun{name: "elastic, gate on", settings: "6 s / 4 s / 1 s", lease: 6 * time.Second, f: f}
	proxy := newBlackholeProxy(t, hostPort(t, testCluster.admin.Host))
	g := []*replicaProc{f.start("g0", ""), f.start("g1", ""), f.start("g2", "")}
	r.start = f.waitFormed(g, 3, time.Time{}, minute)
	time.Sleep(hold)

	at := r.step("join 3→5", causeGraceful, 2.0/5)
	g3 := f.start("g3", "https://"+proxy.Addr()) // the one to black-hole
	g4 := f.start("g4", "")
	f.waitFormed(append(g, g3, g4), 5, at, minute)
	time.Sleep(hold)

	at = r.step("leave 5→2 (SIGTERM)", causeGraceful, 3.0/5)
	f.term(g...)
	f.waitFormed([]*replicaProc{g3, g4}, 2, at, minute)
	time.Sleep(hold)

	at = r.step("join 2→3", causeGraceful, 1.0/3)
	g5 := f.start("g5", "")
	f.waitFormed([]*replicaProc{g3, g4, g5}, 3, at, minute)
	time.Sleep(hold)

	at = r.step("SIGKILL 3→2", causeKill, 1.0/3)
	f.kill(g4)
	ps := []*replicaProc{g3, g5}
	f.waitFormed(ps, 2, at, minute)
	time.Sleep(hold)

	seq := 5 // the replicas started from here on: g6, g7, …
	next := func() *replicaProc {
		seq++
		return f.start(fmt.Sprintf("g%d", seq), "")
	}
	ps = r.blackHoleStep(t, cs, ns, proxy, ps, g3, next)
	ps = r.pauseStep(t, cs, ns, ps, g5, next)
	ps = r.rollingRestart(ps, next)
	time.Sleep(hold)

	r.quiesce(t, ps, churn, cs, ns)
	f.term(ps...)
	r.wall = time.Since(began)
	return r
}

func runElasticUngated(t *testing.T, f *fleet, churn *cmChurn, cs kubernetes.Interface, ns string) *ringRun {
	began := time.Now()
	r := &ringRun{name: "elastic, gate off", settings: "15 s / 10 s / 2 s", lease: 15 * time.Second, f: f}
	proxy := newBlackholeProxy(t, hostPort(t, testCluster.ungated(t).Host))
	u := []*replicaProc{f.start("u0", ""), f.start("u1", ""), f.start("u2", "https://"+proxy.Addr())} // u2: the one to black-hole
	r.start = f.waitFormed(u, 3, time.Time{}, minute)
	time.Sleep(hold)

	at := r.step("join 3→5", causeGraceful, 2.0/5)
	u = append(u, f.start("u3", ""), f.start("u4", ""))
	f.waitFormed(u, 5, at, minute)
	time.Sleep(hold)

	at = r.step("SIGKILL 5→4", causeKill, 1.0/5)
	f.kill(u[4])
	u = u[:4]
	f.waitFormed(u, 4, at, minute)
	time.Sleep(hold)

	at = r.step("leave 4→2 (SIGTERM)", causeGraceful, 2.0/4)
	f.term(u[0], u[1])
	u = u[2:]
	f.waitFormed(u, 2, at, minute)
	time.Sleep(hold)

	at = r.step("black-hole out 2→1", causeBlackHole, 1.0/2)
	proxy.BlackHole(holeForDefaults)
	f.waitFormed([]*replicaProc{u[1]}, 1, at, minute) // u = u2 (black-holed), u3
	time.Sleep(time.Until(at.Add(holeForDefaults)))
	at = r.step("black-hole back 1→2", causeBlackHole, 1.0/2)
	f.waitFormed(u, 2, at, minute)
	time.Sleep(hold)

	r.quiesce(t, u, churn, cs, ns)
	f.term(u...)
	r.wall = time.Since(began)
	return r
}

func runStatic(t *testing.T, f *fleet, churn *cmChurn, cs kubernetes.Interface, ns string) *ringRun {
	began := time.Now()
	r := &ringRun{name: "static i-of-n, gate on (one-by-one rollout)", settings: "–", f: f}
	pods := map[int]*replicaProc{}
	startPod := func(i, n int) *replicaProc {
		p := f.start(fmt.Sprintf("s%d-%d", n, i), "", "--replica", strconv.Itoa(i), "--of", strconv.Itoa(n))
		p.owner = "pod-" + strconv.Itoa(i)
		pods[i] = p
		return p
	}
	var first []*replicaProc
	for i := range 3 {
		first = append(first, startPod(i, 3))
	}
	r.start = f.waitFormed(first, 0, time.Time{}, minute)
	time.Sleep(hold)
	rollout := func(from, to int, ideal float64) {
		r.step(fmt.Sprintf("rollout %d→%d", from, to), causeGraceful, ideal)
		for i := max(from, to) - 1; i >= 0; i-- {
			at := time.Now()
			if old := pods[i]; old != nil {
				r.step(fmt.Sprintf("pod-%d stopped", i), causeGraceful, -1)
				f.term(old)
				delete(pods, i)
			}
			if i < to {
				f.waitFormed([]*replicaProc{startPod(i, to)}, 0, at, minute)
			}
		}
		time.Sleep(hold)
	}
	rollout(3, 5, 2.0/5)
	rollout(5, 2, 3.0/5)
	r.quiesce(t, []*replicaProc{pods[0], pods[1]}, churn, cs, ns)
	f.term(pods[0], pods[1])
	r.wall = time.Since(began)
	return r
}

// quiesce pauses the churn and compares the union of ps's caches with a
// consistent LIST until they agree (or 20 s pass), then resumes the churn.
// The run's analysis ends here.
func (r *ringRun) quiesce(t *testing.T, ps []*replicaProc, churn *cmChurn, cs kubernetes.Interface, ns string) {
	t.Helper()
	r.end = time.Now()
	r.closeMove(r.end)
	churn.quiet()
	defer churn.resume()
	defer func() { r.resumed = time.Now() }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r.q.tries++
		l, err := cs.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		caches := r.f.caches(ps)
		q := quiesceResult{listed: len(l.Items), tries: r.q.tries, server: map[string]serverObject{}}
		union := map[string]string{}
		for _, c := range caches {
			q.shares = append(q.shares, float64(len(c))/float64(len(l.Items)))
			for name, rv := range c {
				if _, ok := union[name]; ok {
					q.dup++
				}
				union[name] = rv
			}
		}
		for _, cm := range l.Items {
			rv, _ := strconv.ParseInt(cm.ResourceVersion, 10, 64)
			q.server[string(cm.UID)] = serverObject{name: cm.Name, rv: rv}
			switch rv, ok := union[cm.Name]; {
			case !ok:
				q.lost++
			case rv != cm.ResourceVersion:
				q.stale++
			}
			delete(union, cm.Name)
		}
		q.extra = len(union)
		r.q = q
		if q.equal() && q.dup == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}
