//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const (
	costObjects   = 10000
	costChurnRate = 25 // writes a second
	costPods      = 5
	// costHold is how long each steady state lasts before its boundary.
	costHold = 2 * time.Second
	// costStatsEvery is how often a replica logs what it received.
	costStatsEvery = 250 * time.Millisecond
	// Goals for the merging ring (issue 38): objects sent per object
	// moved, per change; objects sent by a whole rolling restart, per
	// object.
	goalSentPerMoved = 1.2
	goalRolloutSent  = 2.5
)

// TestMembershipChangeCost measures what a membership change of an elastic
// ring costs on kube-apiserver: 10,000 ConfigMaps under a churn of 25
// writes/s, replicas as processes (hack/e2e/elasticreplica, each logging
// what its ListerWatcher returned every 250 ms). Three runs on the same
// namespace, one after the other:
//
//   - elastic, merging (today's reshard): 5 replicas, then a rolling
//     restart one by one with surge 1, as a Deployment with maxSurge 1 and
//     maxUnavailable 0 does it: a new replica joins (the ring forms with
//     6), then an old one gets SIGTERM (it forms with 5), five times;
//   - elastic, relisting (--reshard-by-relist): the same rollout with each
//     informer listing its whole new share at each change;
//   - unsharded: one plain informer process, restarted once (stopped, then
//     a new one started).
//
// Between changes the test waits for the ring to form, holds 2 s, and
// takes a boundary: a LIST of the namespace (which objects exist, by uid)
// and, from each replica's log, its counts at the first record at or
// after that instant. Per change, from one boundary to the next:
//
//   - moved: objects existing at both boundaries whose owner (the one
//     replica handling it, from the replicas' open and close records
//     matched against the object's uid hash) differs;
//   - listed: objects the replicas' LISTs and WatchList syncs returned,
//     summed over the replicas;
//   - events: watch events (ADDED, MODIFIED, DELETED) the replicas
//     received, against the churn's writes in the same span: in a steady
//     ring each write reaches one replica once, so what exceeds the writes
//     is what the change added (events of buckets two replicas watched
//     during the handoff, a resumed watch's catch-up);
//   - sent: listed plus the events beyond the writes;
//   - handler calls for moved objects on their new owner, and for kept
//     objects (same owner at both boundaries) at the resourceVersion that
//     replica had already handled them at.
//
// It asserts, on the merging run: sent ≤ 1.2 × moved per change, no
// handler call for a kept object at an unchanged resourceVersion, the
// whole rollout's sent ≤ 2.5 N, and the goals of TestElasticRing
// (checkGoals: never two handlers, unowned ≤ 5 s after a graceful change,
// movement ≤ 1.25 × the ideal, the caches' union equal to a LIST at
// quiesce, shares 1/5 ± 5 points). The relisting and unsharded runs are
// the comparison.
func TestMembershipChangeCost(t *testing.T) {
	began := time.Now()
	cs := client(t, testCluster.admin)
	ns := namespace(t, cs)
	bin := buildReplica(t)
	fast := rest.CopyConfig(testCluster.admin)
	fast.QPS = -1 // no client-side rate limit for the creates
	if err := createConfigMaps(t.Context(), client(t, fast), ns, costObjects); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d ConfigMaps created in %v", costObjects, time.Since(began).Round(time.Millisecond))
	churn := startCMChurn(cs, ns, costObjects, costChurnRate)
	token, ca := testCluster.env["ADMIN_TOKEN"], testCluster.env["CA_FILE"]
	common := []string{"--namespace", ns, "--lease-namespace", ns, "--token", token, "--ca", ca, "--stats-every", costStatsEvery.String()}
	elastic := func(ring string, extra ...string) []string {
		args := append(append(append([]string{}, common...), "--mode=elastic", "--ring="+ring), shortLease...)
		return append(args, extra...)
	}

	merge := runRolloutCost(t, newFleet(t, "cost-merge", bin, testCluster.admin.Host, elastic("merge")...), "elastic, merging", "m", churn, cs, ns)
	relist := runRolloutCost(t, newFleet(t, "cost-relist", bin, testCluster.admin.Host, elastic("relist", "--reshard-by-relist")...), "elastic, relisting (--reshard-by-relist)", "r", churn, cs, ns)
	plain := runRestartCost(t, newFleet(t, "cost-plain", bin, testCluster.admin.Host, append(append([]string{}, common...), "--mode=plain")...), churn, cs, ns)
	churn.finish(t)

	runs := []*costRun{merge, relist, plain}
	for _, r := range runs {
		r.analyse(t)
	}
	var detail, summary []string
	detail = append(detail, costHeader)
	summary = append(summary, costSummaryHeader)
	figs := []string{figureHeader}
	for _, r := range runs {
		detail = append(detail, r.detailRows()...)
		summary = append(summary, r.summaryRows()...)
		figs = append(figs, figureRow(r.ringRun, r.fg))
	}
	t.Logf("%d ConfigMaps (N = %d at the first boundary), churn %.1f writes/s, whole test %v\nper change:\n%s\nsummary:\n%s\nhandoffs:\n%s",
		costObjects, merge.n(), churn.rate(), time.Since(began).Round(time.Second),
		strings.Join(detail, "\n"), strings.Join(summary, "\n"), strings.Join(figs, "\n"))
	for _, r := range runs {
		t.Logf("%s: %s; changes %s", r.name, r.reshards(t), r.timeline())
	}

	if churn.rate() < 20 {
		t.Errorf("the churn reached %.1f writes/s, want ≥ 20", churn.rate())
	}
	for _, s := range merge.steps {
		if s.orphans > 0 {
			t.Errorf("%s, %s: %d objects had no single owner at a boundary", merge.name, s.label, s.orphans)
		}
		if s.moved == 0 || float64(s.sent())/float64(s.moved) > goalSentPerMoved {
			t.Errorf("%s, %s: %d objects sent (%d listed, %d events beyond the writes) for %d moved, want ≤ %.1f per moved",
				merge.name, s.label, s.sent(), s.listed, s.extra, s.moved, goalSentPerMoved)
		}
		if s.keptCalls > 0 {
			t.Errorf("%s, %s: %d handler calls for kept objects at a resourceVersion already handled", merge.name, s.label, s.keptCalls)
		}
	}
	if total, n := merge.total(), merge.n(); float64(total.sent()) > goalRolloutSent*float64(n) {
		t.Errorf("%s: the rollout sent %d objects, %.2f N, want ≤ %.1f N (N = %d)", merge.name, total.sent(), float64(total.sent())/float64(n), goalRolloutSent, n)
	}
	checkGoals(t, merge.ringRun, merge.fg, true)
}

// costRun is one run of TestMembershipChangeCost: the ring run it extends
// (replicas, changes, the handoff figures), its boundaries and, once
// analysed, its steps.
type costRun struct {
	*ringRun
	churn  *cmChurn
	cs     kubernetes.Interface
	ns     string
	bounds []costBoundary
	labels []string // labels[k]: the change from bounds[k] to bounds[k+1]
	kinds  []string // join, leave or restart
	steps  []costStep
	fg     figures
}

// costBoundary is an instant of steady state between two changes.
type costBoundary struct {
	at time.Time
	// objs maps the uid of every object a LIST returned then to its name.
	objs   map[string]string
	writes uint64
}

// boundary takes a boundary now: the LIST, the churn's writes so far; then
// waits until every running replica has logged its counts since.
func (c *costRun) boundary(t *testing.T) {
	t.Helper()
	b := costBoundary{at: time.Now(), writes: c.churn.writes.Load(), objs: map[string]string{}}
	l, err := c.cs.CoreV1().ConfigMaps(c.ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range l.Items {
		b.objs[string(cm.UID)] = cm.Name
	}
	c.bounds = append(c.bounds, b)
	deadline := time.Now().Add(30 * time.Second)
	for _, p := range c.f.procs {
		for p.alive() {
			if err := p.read(); err != nil {
				t.Fatal(err)
			}
			if hasStatsSince(p, b.at) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s logged no stats within 30 s of a boundary", p.id)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func hasStatsSince(p *replicaProc, at time.Time) bool {
	for i := len(p.recs) - 1; i >= 0; i-- {
		r := p.recs[i]
		if r.at().Before(at) {
			return false
		}
		if r.Kind == "stats" {
			return true
		}
	}
	return false
}

// change records a change about to be made (after a boundary); ideal is
// the share of the objects it should move, for checkGoals.
func (c *costRun) change(label, kind string, ideal float64) time.Time {
	c.labels = append(c.labels, label)
	c.kinds = append(c.kinds, kind)
	return c.step(label, causeGraceful, ideal)
}

// runRolloutCost runs one elastic run: costPods replicas formed, then a
// rolling restart with surge 1.
func runRolloutCost(t *testing.T, f *fleet, name, prefix string, churn *cmChurn, cs kubernetes.Interface, ns string) *costRun {
	began := time.Now()
	c := &costRun{ringRun: &ringRun{name: name, settings: "6 s / 4 s / 1 s", lease: 6 * time.Second, f: f}, churn: churn, cs: cs, ns: ns}
	var live []*replicaProc
	for i := range costPods {
		live = append(live, f.start(fmt.Sprintf("%s%d", prefix, i), ""))
	}
	c.start = f.waitFormed(live, costPods, time.Time{}, minute)
	time.Sleep(costHold)
	c.boundary(t)
	for i := range costPods {
		at := c.change(fmt.Sprintf("pod %d: join %d→%d", i+1, costPods, costPods+1), "join", 1.0/float64(costPods+1))
		live = append(live, f.start(fmt.Sprintf("%s%d", prefix, costPods+i), ""))
		f.waitFormed(live, costPods+1, at, minute)
		time.Sleep(costHold)
		c.boundary(t)

		at = c.change(fmt.Sprintf("pod %d: leave %d→%d", i+1, costPods+1, costPods), "leave", 1.0/float64(costPods+1))
		old := live[0]
		live = live[1:]
		f.term(old)
		f.waitFormed(live, costPods, at, minute)
		time.Sleep(costHold)
		c.boundary(t)
	}
	c.quiesce(t, live, churn, cs, ns)
	f.term(live...)
	c.wall = time.Since(began)
	return c
}

// runRestartCost runs the unsharded comparison: one plain informer
// process, stopped and replaced once.
func runRestartCost(t *testing.T, f *fleet, churn *cmChurn, cs kubernetes.Interface, ns string) *costRun {
	began := time.Now()
	c := &costRun{ringRun: &ringRun{name: "unsharded, restarted once", settings: "–", f: f}, churn: churn, cs: cs, ns: ns}
	p := f.start("p0", "")
	c.start = f.waitFormed([]*replicaProc{p}, 0, time.Time{}, minute)
	time.Sleep(costHold)
	c.boundary(t)
	at := c.change("restart", "restart", 1)
	f.term(p)
	p = f.start("p1", "")
	f.waitFormed([]*replicaProc{p}, 0, at, minute)
	time.Sleep(costHold)
	c.boundary(t)
	c.quiesce(t, []*replicaProc{p}, churn, cs, ns)
	f.term(p)
	c.wall = time.Since(began)
	return c
}

// received is what a replica had received at one instant, from its
// "stats" records (the replica's statsRecord).
type received struct {
	listed, events, bytes uint64
	// itemsListed is the informer's own Stats.ItemsListed, beside the
	// count from the ListerWatcher.
	itemsListed uint64
	merged      uint64
	fallbacks   map[string]uint64
	// syncs counts LISTs and WatchLists by cause.
	syncs map[string]uint64
}

// statsLine is the part of a replica's log line that a "stats" record
// fills.
type statsLine struct {
	T     int64  `json:"t"`
	Kind  string `json:"kind"`
	Stats *struct {
		ItemsListed        uint64            `json:"itemsListed"`
		Lists              map[string]uint64 `json:"lists"`
		WatchLists         map[string]uint64 `json:"watchLists"`
		ReshardsMerged     uint64            `json:"reshardsMerged"`
		ReshardFallbacks   map[string]uint64 `json:"reshardFallbacks"`
		WireListItems      uint64            `json:"wireListItems"`
		WireWatchListItems uint64            `json:"wireWatchListItems"`
		WireEvents         map[string]uint64 `json:"wireEvents"`
		WireBytes          uint64            `json:"wireBytes"`
	} `json:"stats"`
}

type statsSample struct {
	at time.Time
	r  received
}

// statsSamples reads p's "stats" records.
func statsSamples(t *testing.T, p *replicaProc) []statsSample {
	t.Helper()
	fh, err := os.Open(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out []statsSample
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if !strings.Contains(sc.Text(), `"kind":"stats"`) {
			continue
		}
		var l statsLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.Stats == nil {
			t.Fatalf("%s: a stats line: %v", p.logPath, err)
		}
		s := l.Stats
		syncs := map[string]uint64{}
		for cause, n := range s.Lists {
			syncs["LIST "+cause] += n
		}
		for cause, n := range s.WatchLists {
			syncs["WatchList "+cause] += n
		}
		out = append(out, statsSample{at: time.Unix(0, l.T), r: received{
			listed: s.WireListItems + s.WireWatchListItems, events: s.WireEvents["ADDED"] + s.WireEvents["MODIFIED"] + s.WireEvents["DELETED"],
			bytes: s.WireBytes, itemsListed: s.ItemsListed, merged: s.ReshardsMerged, fallbacks: s.ReshardFallbacks, syncs: syncs,
		}})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// receivedAt is what a replica had received at instant at: nothing if it
// started later; the first sample at or after at; the last (written once
// its informer stopped) if it had exited by then.
func receivedAt(p *replicaProc, samples []statsSample, at time.Time) received {
	if len(p.recs) == 0 || p.recs[0].at().After(at) || len(samples) == 0 {
		return received{}
	}
	i := sort.Search(len(samples), func(i int) bool { return !samples[i].at.Before(at) })
	if i == len(samples) {
		i--
	}
	return samples[i].r
}

// costStep is one change's figures, from one boundary to the next.
type costStep struct {
	label, kind string
	// moved and kept count the objects existing at both boundaries
	// whose owner changed or did not; orphans those with no single owner
	// at one of them.
	moved, kept, orphans int
	listed, events       uint64
	writes               uint64
	// extra is the events beyond the writes, per change.
	extra uint64
	bytes uint64
	// itemsListed is the informers' own count of what was listed
	// (Stats.ItemsListed), beside listed, what their ListerWatchers
	// returned: a LIST or WatchList cut short by a newer shard counts in
	// listed only.
	itemsListed uint64
	// movedCalls: handler calls on the new owner for moved objects;
	// keptCalls: handler calls for kept objects at the resourceVersion
	// the calling replica had already handled.
	movedCalls, keptCalls int
}

// sent is what the change cost in objects kube-apiserver sent: what was
// listed and the events beyond the writes made meanwhile (per change: a
// sum of steps sums each step's).
func (s costStep) sent() uint64 { return s.listed + s.extra }

func (s *costStep) add(o costStep) {
	s.moved += o.moved
	s.kept += o.kept
	s.orphans += o.orphans
	s.listed += o.listed
	s.events += o.events
	s.writes += o.writes
	s.extra += o.extra
	s.bytes += o.bytes
	s.itemsListed += o.itemsListed
	s.movedCalls += o.movedCalls
	s.keptCalls += o.keptCalls
}

// n is the number of objects at the first boundary.
func (c *costRun) n() int { return len(c.bounds[0].objs) }

// analyse computes the steps and the handoff figures from the logs.
func (c *costRun) analyse(t *testing.T) {
	t.Helper()
	// Every object of any boundary, placed by its uid's hash.
	index := map[string]int{}
	var objs []baseObject
	for _, b := range c.bounds {
		for uid, name := range b.objs {
			if _, ok := index[uid]; !ok {
				index[uid] = len(objs)
				objs = append(objs, baseObject{name: name, uid: uid, hash: uidHash(types.UID(uid))})
			}
		}
	}
	ivs := c.intervals(t, objs)
	owners := make([][]string, len(c.bounds)) // per boundary, per object
	for k, b := range c.bounds {
		owners[k] = make([]string, len(objs))
		for uid := range b.objs {
			owners[k][index[uid]] = c.ownerAt(ivs[index[uid]], b.at)
		}
	}
	c.steps = make([]costStep, len(c.labels))
	// status per step: per object, 1 moved, 2 kept, 0 neither.
	status := make([][]byte, len(c.labels))
	for k := range c.labels {
		s := &c.steps[k]
		s.label, s.kind = c.labels[k], c.kinds[k]
		s.writes = c.bounds[k+1].writes - c.bounds[k].writes
		status[k] = make([]byte, len(objs))
		for uid := range c.bounds[k].objs {
			if _, ok := c.bounds[k+1].objs[uid]; !ok {
				continue
			}
			i := index[uid]
			a, b := owners[k][i], owners[k+1][i]
			switch {
			case a == "" || b == "":
				s.orphans++
			case a != b:
				s.moved++
				status[k][i] = 1
			default:
				s.kept++
				status[k][i] = 2
			}
		}
	}
	for _, p := range c.f.procs {
		samples := statsSamples(t, p)
		for k := range c.steps {
			a, b := receivedAt(p, samples, c.bounds[k].at), receivedAt(p, samples, c.bounds[k+1].at)
			s := &c.steps[k]
			s.listed += b.listed - a.listed
			s.events += b.events - a.events
			s.bytes += b.bytes - a.bytes
			s.itemsListed += b.itemsListed - a.itemsListed
		}
		c.countCalls(p, index, owners, status)
	}
	for k := range c.steps {
		s := &c.steps[k]
		s.extra = s.events - min(s.events, s.writes)
	}
	c.fg = c.figures(t, baseOf(objs))
}

// countCalls counts p's handler calls in each step: for moved objects on
// their new owner, and for kept objects at a resourceVersion p had
// already handled the object at.
func (c *costRun) countCalls(p *replicaProc, index map[string]int, owners [][]string, status [][]byte) {
	last := map[string]string{} // uid → resourceVersion of p's last call
	for _, rec := range p.recs {
		if rec.Kind != "call" {
			continue
		}
		prev, seen := last[rec.UID]
		last[rec.UID] = rec.RV
		at := rec.at()
		k := sort.Search(len(c.bounds), func(k int) bool { return !c.bounds[k].at.Before(at) }) - 1
		i, ok := index[rec.UID]
		if k < 0 || k >= len(c.steps) || !ok {
			continue
		}
		switch status[k][i] {
		case 1:
			if owners[k+1][i] == p.owner {
				c.steps[k].movedCalls++
			}
		case 2:
			if seen && prev == rec.RV {
				c.steps[k].keptCalls++
			}
		}
	}
}

// baseOf keeps the objects named cm-*, which live through the whole test:
// the handoff figures (double handling, unowned time, movement at each
// change's instants) are over them.
func baseOf(objs []baseObject) []baseObject {
	var out []baseObject
	for _, o := range objs {
		if strings.HasPrefix(o.name, "cm-") {
			out = append(out, o)
		}
	}
	return out
}

// total is the sum of every step.
func (c *costRun) total() costStep {
	var s costStep
	for _, st := range c.steps {
		s.add(st)
	}
	return s
}

// reshards sums the replicas' reshard and sync counts at their last
// samples, and compares the informers' count of items listed during the
// changes with what their ListerWatchers returned.
func (c *costRun) reshards(t *testing.T) string {
	var merged uint64
	fallbacks, syncs := map[string]uint64{}, map[string]uint64{}
	for _, p := range c.f.procs {
		samples := statsSamples(t, p)
		if len(samples) == 0 {
			continue
		}
		r := samples[len(samples)-1].r
		merged += r.merged
		for k, v := range r.fallbacks {
			fallbacks[k] += v
		}
		for k, v := range r.syncs {
			syncs[k] += v
		}
	}
	total := c.total()
	return fmt.Sprintf("reshards merged %d, fallen back %v; syncs by cause %v (whole run); during the changes Stats.ItemsListed %d, the ListerWatchers returned %d",
		merged, fallbacks, syncs, total.itemsListed, total.listed)
}

const costHeader = "| run | change | objects moved | listed | watch events (writes) | sent per moved | handler calls: moved objects / kept objects at an unchanged rv | MB received |\n" +
	"|---|---|---|---|---|---|---|---|"

func costRow(run, label string, s costStep) string {
	ratio := "–"
	if s.moved > 0 {
		ratio = fmt.Sprintf("%.2f", float64(s.sent())/float64(s.moved))
	}
	return fmt.Sprintf("| %s | %s | %d | %d | %d (%d) | %s | %d / %d | %.1f |",
		run, label, s.moved, s.listed, s.events, s.writes, ratio, s.movedCalls, s.keptCalls, float64(s.bytes)/1e6)
}

func (c *costRun) detailRows() []string {
	var out []string
	for _, s := range c.steps {
		out = append(out, costRow(c.name, s.label, s))
	}
	return out
}

const costSummaryHeader = "| run | changes | objects moved | objects sent (listed + events beyond the writes) | sent per moved (worst change) | handler calls for kept objects at an unchanged rv | sent in all, per N |\n" +
	"|---|---|---|---|---|---|---|"

func (c *costRun) summaryRows() []string {
	byKind := map[string][]costStep{}
	var kinds []string
	for _, s := range c.steps {
		if _, ok := byKind[s.kind]; !ok {
			kinds = append(kinds, s.kind)
		}
		byKind[s.kind] = append(byKind[s.kind], s)
	}
	row := func(label string, steps []costStep) string {
		var sum costStep
		worst := 0.0
		for _, s := range steps {
			sum.add(s)
			if s.moved > 0 {
				worst = max(worst, float64(s.sent())/float64(s.moved))
			}
		}
		ratio := "–"
		if sum.moved > 0 {
			ratio = fmt.Sprintf("%.2f (%.2f)", float64(sum.sent())/float64(sum.moved), worst)
		}
		return fmt.Sprintf("| %s | %s | %d | %d (%d + %d) | %s | %d | %.2f N |",
			c.name, label, sum.moved, sum.sent(), sum.listed, sum.extra, ratio, sum.keptCalls, float64(sum.sent())/float64(c.n()))
	}
	var out []string
	for _, k := range kinds {
		label := k
		if n := len(byKind[k]); n > 1 {
			label = fmt.Sprintf("%d × %s", n, k)
		}
		out = append(out, row(label, byKind[k]))
	}
	if len(kinds) > 1 {
		out = append(out, row("whole rollout", c.steps))
	}
	return out
}
