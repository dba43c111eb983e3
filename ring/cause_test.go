package ring

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kreflector/cache"
)

// logLines records what a logger writes, split into error and info
// lines.
type logLines struct {
	mu           sync.Mutex
	errors, info []string
}

func (l *logLines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if strings.Contains(args, `"error"=`) {
			l.errors = append(l.errors, args)
		} else {
			l.info = append(l.info, args)
		}
	}, funcr.Options{})
}

// counts returns how many error and info lines hold every one of words.
func (l *logLines) counts(words ...string) (errs, infos int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	has := func(line string) bool {
		for _, w := range words {
			if !strings.Contains(line, w) {
				return false
			}
		}
		return true
	}
	for _, line := range l.errors {
		if has(line) {
			errs++
		}
	}
	for _, line := range l.info {
		if has(line) {
			infos++
		}
	}
	return errs, infos
}

// failLeases makes every Lease call of g's replicas fail with err while
// failing is set.
func (g *rig) failLeases(failing *atomic.Bool, err error) {
	g.leases.PrependReactor("*", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if failing.Load() {
			return true, nil, err
		}
		return false, nil, nil
	})
}

// A replica whose Lease calls are refused (forbidden by RBAC, or 404 as
// for a namespace that does not exist) says so everywhere: the ring
// informer's Health (as its Gate), its WaitForSync and the ring's Status
// all carry the error, with its type, and the failures are logged at
// error level once a minute, not every RetryPeriod; once the calls
// succeed, that is logged once and the ring forms.
func TestRingWhoseLeaseCallsFailSaysWhy(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		is   func(error) bool
		says string
	}{
		{"forbidden", apierrors.NewForbidden(leasesResource.GroupResource(), "", errors.New("RBAC: access denied")), apierrors.IsForbidden, "access denied"},
		{"absent", apierrors.NewNotFound(leasesResource.GroupResource(), ""), apierrors.IsNotFound, "not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T, ctx context.Context) {
				var logs logLines
				g := newRig(t, klog.NewContext(ctx, logs.logger()), 20)
				var failing atomic.Bool
				failing.Store(true)
				g.failLeases(&failing, tc.err)
				rp := g.join("a")
				time.Sleep(3*time.Minute + time.Second)
				checkCause(t, ctx, rp, tc.is, "has not read the ring yet")
				// Rounds every 2 s from 0 s: lines at 0, 60, 120 and 180 s.
				if errs, _ := logs.counts("cannot renew its Lease", tc.says); errs != 4 {
					t.Errorf("%d error lines in 3 minutes of failures, want 4 (at 0, 60, 120, 180 s): %q", errs, logs.errors)
				}
				if errs, _ := logs.counts(`"failures"=91`); errs != 1 {
					t.Errorf("the line at 180 s does not count 91 failures: %q", logs.errors)
				}

				failing.Store(false)
				g.waitFormed(30 * time.Second)
				if err := rp.inf.WaitForSync(ctx); err != nil {
					t.Fatal(err)
				}
				if h := rp.inf.Health(); h.Gate != nil || !h.Healthy {
					t.Fatalf("Health once formed = %+v, want healthy with no gate", h)
				}
				// The error is history now: were the replica not formed (as
				// in a handoff), its cause would not be that error.
				s := rp.ring.Status()
				s.Members = 0
				if err := s.Err(); !tc.is(s.LastError) || tc.is(err) || !errors.Is(err, ErrNotFormed) {
					t.Errorf("Status.Err after recovering = %v (last error %v); want ErrNotFormed, not the Lease error of the past", err, s.LastError)
				}
				errs, _ := logs.counts("Ring member")
				if _, again := logs.counts("Ring member", "again"); errs != 4 || again != 1 {
					t.Errorf("after recovering: %d error lines (want 4), %d info lines saying so (want 1): %q", errs, again, logs.info)
				}
				g.leave("a")
			})
		})
	}
}

// checkCause checks that rp's informer Health (as a value and as it
// prints), its WaitForSync and its ring's Status all carry an error is
// accepts, and say state.
func checkCause(t *testing.T, ctx context.Context, rp *replica, is func(error) bool, state string) {
	t.Helper()
	h := rp.inf.Health()
	if h.Healthy || !is(h.Gate) || !errors.Is(h.Gate, ErrNotFormed) || !strings.Contains(h.Gate.Error(), state) {
		t.Errorf("Health = %+v; want unhealthy, its Gate wrapping ErrNotFormed and the Lease error, saying %q", h, state)
	}
	// What a user prints (fmt.Println(inf.Health())) says it too.
	if printed := fmt.Sprint(h); h.Gate == nil || !strings.Contains(printed, "held back: "+h.Gate.Error()) || !strings.Contains(printed, state) {
		t.Errorf("Health prints as %q; want the Gate's cause in it, saying %q", printed, state)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	err := rp.inf.WaitForSync(wctx)
	if !is(err) || !errors.Is(err, ErrNotFormed) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), state) {
		t.Errorf("WaitForSync = %v; want it to wrap ErrNotFormed, the Lease error and the deadline, saying %q", err, state)
	}
	s := rp.ring.Status()
	if !is(s.LastError) || !is(s.Err()) || !strings.Contains(s.String(), state) {
		t.Errorf("Status = %s; want its LastError and Err to be the Lease error, saying %q", s, state)
	}
}

// A ring informer stopped before its ring formed (as controller-runtime
// stops its informers after its cache sync timeout, saying only "timed
// out") logs the ring's cause at error level, through its context's
// logger; one that synced logs no such line.
func TestRingInformerStoppedUnformedLogsTheCause(t *testing.T) {
	inBubble(t, func(t *testing.T, ctx context.Context) {
		var logs logLines
		g := newRig(t, klog.NewContext(ctx, logs.logger()), 20)
		var failing atomic.Bool
		failing.Store(true)
		g.failLeases(&failing, apierrors.NewForbidden(leasesResource.GroupResource(), "", errors.New("RBAC: access denied")))
		g.join("a")
		time.Sleep(10 * time.Second)
		g.leave("a")
		const line = "Ring informer stopped before its ring formed"
		if errs, _ := logs.counts(line, "access denied", "has not read the ring yet"); errs != 1 {
			t.Errorf("%d error lines say the stopped informer's cause, want 1: %q", errs, logs.errors)
		}
		failing.Store(false)
		g.join("b")
		g.waitFormed(30 * time.Second)
		g.leave("b")
		if errs, _ := logs.counts(line); errs > 1 {
			t.Errorf("an informer that synced logged that it stopped unformed: %q", logs.errors)
		}
	})
}

// A fenced replica is unhealthy and says why until it renews again.
func TestFencedRingInformerIsUnhealthy(t *testing.T) {
	inBubble(t, func(t *testing.T, ctx context.Context) {
		g := newRig(t, ctx, 20)
		rp := g.join("a")
		g.waitFormed(30 * time.Second)
		if h := rp.inf.Health(); !h.Healthy || h.Gate != nil {
			t.Fatalf("Health once formed = %+v", h)
		}
		rp.holes.set(true)
		g.sampleFor(DefaultRenewDeadline + time.Second)
		checkCause(t, ctx, rp, func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }, "fenced")
		if h := rp.inf.Health(); h.Reflector.State != cache.Synced {
			t.Errorf("the informer's own health = %v, want Synced: only the ring holds it back", h.Reflector)
		}
		rp.holes.set(false)
		g.waitFormed(30 * time.Second)
		if h := rp.inf.Health(); !h.Healthy || h.Gate != nil {
			t.Fatalf("Health after renewing again = %+v", h)
		}
		g.leave("a")
	})
}

// roundLog logs the first failure at once, then at most once a minute
// while failures go on, with their count, and once when a round succeeds;
// a new run of failures is logged at once again.
func TestRoundLogIsRateLimited(t *testing.T) {
	var logs logLines
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	l := roundLog{logger: logs.logger(), clock: clk}
	boom := errors.New("boom")
	for range 100 { // 200 s of failures every 2 s: lines at 0, 60, 120, 180 s
		l.failed(boom)
		clk.Step(2 * time.Second)
	}
	if errs, infos := logs.counts(); errs != 4 || infos != 0 {
		t.Fatalf("%d error and %d info lines for 200 s of failures, want 4 and 0: %q", errs, infos, logs.errors)
	}
	if errs, _ := logs.counts(`"failures"=91`, `"failingFor"="3m0s"`, "boom"); errs != 1 {
		t.Errorf("the line at 180 s does not say 91 failures for 3m0s: %q", logs.errors)
	}
	l.succeeded()
	l.succeeded()
	if _, infos := logs.counts(`"failures"=100`, `"failedFor"="3m20s"`); infos != 1 || len(logs.info) != 1 {
		t.Errorf("recovery lines: %q; want one, saying 100 failures for 3m20s", logs.info)
	}
	clk.Step(time.Second)
	l.failed(boom)
	if n := len(logs.errors); n != 5 || !strings.Contains(logs.errors[n-1], `"failures"=1 "failingFor"="0s"`) {
		t.Errorf("a new failure after recovering is not logged at once as the first: %q", logs.errors)
	}
}
