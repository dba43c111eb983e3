package ring

import (
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// Once the fencing deadline has passed, no handler call passes the gate
// and Handles says false, even if the fencing goroutine has not run yet:
// a process resumed after a pause (SIGSTOP) past its lease may run its
// handlers' goroutines before its fencer's.
func TestGateRefusesCallsPastTheFencingDeadline(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	g := newGate(16, clk.Now, func(bool, set) {})
	s := newSet(16)
	s.add(3)
	g.open(s)
	g.fenceAt(clk.Now().Add(10 * time.Second))
	ran := 0
	if !g.call(3, func() { ran++ }) || ran != 1 || !g.handles(3) {
		t.Fatal("a call before the deadline did not pass")
	}
	clk.Step(10 * time.Second)
	if g.call(3, func() { ran++ }) || ran != 1 {
		t.Fatal("a call at the deadline passed")
	}
	if g.handles(3) {
		t.Fatal("Handles says true past the deadline")
	}
	g.fenceAt(clk.Now().Add(10 * time.Second)) // renewed
	if !g.call(3, func() { ran++ }) || ran != 2 {
		t.Fatal("a call after a renewal did not pass")
	}
}
