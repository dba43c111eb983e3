//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

const (
	// faultAtLeast: a pause or black-hole lasts at least this long past
	// twice the lease, and until the others have deleted the Lease of
	// the replica cut off (they do so once it has been expired for twice
	// its duration), at most faultAtMost.
	faultAtLeast = 2 * time.Second
	faultAtMost  = 30 * time.Second
	// rejoinWithin: how long a replica back from a fault may take to be
	// formed again with every member.
	rejoinWithin = 30 * time.Second
	// rollHold: how long a rolling restart waits after each formation.
	rollHold = time.Second
)

// faultResult is what became of one replica cut off by a fault.
type faultResult struct {
	label, replica string
	// lasted is how long the fault lasted; leaseGone when, after it
	// began, the replica's Lease was seen deleted (0: it was not).
	lasted, leaseGone time.Duration
	// back says whether it was formed again with every member within
	// rejoinWithin of the fault's end, after backIn.
	back   bool
	backIn time.Duration
}

func (f faultResult) String() string {
	gone := "its Lease not deleted"
	if f.leaseGone > 0 {
		gone = fmt.Sprintf("its Lease deleted after %.1f s", f.leaseGone.Seconds())
	}
	back := fmt.Sprintf("back in %.1f s", f.backIn.Seconds())
	if !f.back {
		back = fmt.Sprintf("NOT back within %v", rejoinWithin)
	}
	return fmt.Sprintf("%s %s for %.1f s (%s): %s", f.replica, f.label, f.lasted.Seconds(), gone, back)
}

// pause stops p (SIGSTOP) and cont resumes it (SIGCONT); while stopped
// p handles nothing, whatever its log says (see intervals).
func (f *fleet) pause(p *replicaProc) {
	p.pauses = append(p.pauses, pauseSpan{from: time.Now()})
	_ = p.cmd.Process.Signal(syscall.SIGSTOP)
}

func (f *fleet) cont(p *replicaProc) {
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	p.pauses[len(p.pauses)-1].to = time.Now()
}

// resumeFence bounds how long after SIGCONT a process's first close
// record may come and still be the fence of its overdue renew deadline.
const resumeFence = time.Second

// stoppedSpans returns p's pauses, each extended from SIGCONT to the
// first close p logged afterwards if that came within resumeFence. A
// process stopped past its renew deadline resumes with its gate open
// until its fence, overdue, runs: until then it handles nothing in the
// ring's eyes, and any call it makes there is counted apart (see
// callsOnResume).
func (p *replicaProc) stoppedSpans() []pauseSpan {
	out := slices.Clone(p.pauses)
	for i, ps := range out {
		for _, rec := range p.recs {
			if rec.Kind == "close" && !rec.at().Before(ps.to) {
				if rec.at().Sub(ps.to) <= resumeFence {
					out[i].to = rec.at()
				}
				break
			}
		}
	}
	return out
}

// callsOnResume counts the handler calls of r's processes between a
// SIGCONT and their fence (stoppedSpans).
func (r *ringRun) callsOnResume(calls []handlerCall) int {
	spans := make([][]pauseSpan, len(r.f.procs))
	for pi, p := range r.f.procs {
		spans[pi] = p.stoppedSpans()
	}
	n := 0
	for _, c := range calls {
		for i, ps := range spans[c.proc] {
			if !c.t.Before(r.f.procs[c.proc].pauses[i].to) && !c.t.After(ps.to) {
				n++
			}
		}
	}
	return n
}

// paused says whether r stopped a process.
func (r *ringRun) paused() bool {
	for _, p := range r.f.procs {
		if len(p.pauses) > 0 {
			return true
		}
	}
	return false
}

// leaseName is the name of p's Lease, from its start record.
func (f *fleet) leaseName(p *replicaProc) string {
	f.t.Helper()
	if err := p.read(); err != nil {
		f.t.Fatal(err)
	}
	for _, rec := range p.recs {
		if rec.Kind == "start" && rec.Lease != "" {
			return rec.Lease
		}
	}
	f.t.Fatalf("%s logged no Lease name", p.id)
	return ""
}

// holdFault waits, from a fault begun at began, until p's Lease is gone
// and at least twice the lease plus faultAtLeast has passed, or
// faultAtMost; it returns when after began the Lease was seen gone (0 if
// it was not).
func (r *ringRun) holdFault(t *testing.T, cs kubernetes.Interface, ns string, p *replicaProc, began time.Time) time.Duration {
	t.Helper()
	name := r.f.leaseName(p)
	var gone time.Duration
	for time.Since(began) < faultAtMost {
		if gone == 0 {
			_, err := cs.CoordinationV1().Leases(ns).Get(t.Context(), name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				gone = time.Since(began)
			case err != nil:
				t.Fatal(err)
			}
		}
		if gone > 0 && time.Since(began) >= 2*r.lease+faultAtLeast {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	return gone
}

// rejoin waits for ps (p among them) to be formed with every member after
// a fault of p that ended at ended, and records the fault. If p is not
// back within rejoinWithin, it is SIGKILLed and a fresh replica started
// in its place, so that the run goes on with as many; rejoin returns ps
// with the replacement.
func (r *ringRun) rejoin(ps []*replicaProc, p *replicaProc, fr faultResult, ended time.Time, next func() *replicaProc) []*replicaProc {
	r.f.t.Helper()
	fr.replica = p.id
	at, why, ok := r.f.tryFormed(ps, len(ps), ended, rejoinWithin)
	fr.back, fr.backIn = ok, at.Sub(ended)
	r.faults = append(r.faults, fr)
	if ok {
		return ps
	}
	r.f.t.Logf("%s: %s not back after its %s: %s; replacing it", r.name, p.id, fr.label, why)
	r.step(fmt.Sprintf("replace %s (SIGKILL)", p.id), causeKill, -1)
	r.f.kill(p)
	ps = slices.DeleteFunc(slices.Clone(ps), func(q *replicaProc) bool { return q == p })
	ps = append(ps, next())
	r.f.waitFormed(ps, len(ps), time.Now(), minute)
	return ps
}

// pauseStep SIGSTOPs p, one of ps, past twice the lease and until its
// Lease is deleted, SIGCONTs it and waits for it to be back.
func (r *ringRun) pauseStep(t *testing.T, cs kubernetes.Interface, ns string, ps []*replicaProc, p *replicaProc, next func() *replicaProc) []*replicaProc {
	n := len(ps)
	rest := slices.DeleteFunc(slices.Clone(ps), func(q *replicaProc) bool { return q == p })
	at := r.step(fmt.Sprintf("SIGSTOP out %d→%d", n, n-1), causeStop, 1/float64(n))
	r.f.pause(p)
	r.f.waitFormed(rest, n-1, at, minute)
	gone := r.holdFault(t, cs, ns, p, at)
	r.f.cont(p)
	ended := r.step(fmt.Sprintf("SIGCONT back %d→%d", n-1, n), causeStop, 1/float64(n))
	ps = r.rejoin(ps, p, faultResult{label: "SIGSTOP", lasted: ended.Sub(at), leaseGone: gone}, ended, next)
	time.Sleep(hold)
	return ps
}

// blackHoleStep black-holes the connection of p, one of ps, through proxy
// past twice the lease and until its Lease is deleted, then lets it
// through again and waits for p to be back.
func (r *ringRun) blackHoleStep(t *testing.T, cs kubernetes.Interface, ns string, proxy *blackholeProxy, ps []*replicaProc, p *replicaProc, next func() *replicaProc) []*replicaProc {
	n := len(ps)
	rest := slices.DeleteFunc(slices.Clone(ps), func(q *replicaProc) bool { return q == p })
	at := r.step(fmt.Sprintf("black-hole out %d→%d", n, n-1), causeBlackHole, 1/float64(n))
	proxy.BlackHole(faultAtMost)
	r.f.waitFormed(rest, n-1, at, minute)
	gone := r.holdFault(t, cs, ns, p, at)
	proxy.Heal()
	ended := r.step(fmt.Sprintf("black-hole back %d→%d", n-1, n), causeBlackHole, 1/float64(n))
	ps = r.rejoin(ps, p, faultResult{label: "black-hole", lasted: ended.Sub(at), leaseGone: gone}, ended, next)
	time.Sleep(hold)
	return ps
}

// rollingRestart replaces each of ps in turn: a new replica starts (a
// surge of one) and, once the ring is formed with it, the old one gets
// SIGTERM.
func (r *ringRun) rollingRestart(ps []*replicaProc, next func() *replicaProc) []*replicaProc {
	n := len(ps)
	cur := slices.Clone(ps)
	for _, old := range ps {
		at := r.step(fmt.Sprintf("restart %s: new joins %d→%d", old.id, n, n+1), causeGraceful, 1/float64(n+1))
		nu := next()
		cur = append(cur, nu)
		r.f.waitFormed(cur, n+1, at, minute)
		time.Sleep(rollHold)
		at = r.step(fmt.Sprintf("restart %s: old leaves %d→%d", old.id, n+1, n), causeGraceful, 1/float64(n+1))
		r.f.term(old)
		cur = slices.DeleteFunc(cur, func(q *replicaProc) bool { return q == old })
		r.f.waitFormed(cur, n, at, minute)
		time.Sleep(rollHold)
	}
	return cur
}
