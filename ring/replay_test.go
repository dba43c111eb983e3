package ring

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// killWithDeletes forms a ring of a and b, kills b, deletes n of the
// objects b handled while its Lease has not expired yet, and waits until
// a has taken everything over. It returns the objects deleted.
func killWithDeletes(t *testing.T, g *rig, log *callLog, n int) []runtime.Object {
	t.Helper()
	g.joinWith("a", nil, log.handler("a"))
	g.joinWith("b", nil, log.handler("b"))
	g.waitFormed(30 * time.Second)
	g.sampleFor(time.Second)
	var victims []runtime.Object
	for _, o := range g.objects {
		if g.replicas["b"].ring.Handles(o) && len(victims) < n {
			victims = append(victims, o)
		}
	}
	g.kill("b")
	for _, v := range victims {
		cm := v.(*corev1.ConfigMap)
		if _, err := g.cms.Delete(g.ctx, cm.Namespace, cm.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		g.objects = slicesDelete(g.objects, v)
	}
	return victims
}

// Deletes made while a range's owner is dead, before another replica has
// taken the range over (or even cached it), reach the new owner: it
// replays them from the watch history, from the position the dead owner
// last published in its Lease.
func TestDeletesWhileAnOwnerIsDeadReachItsSuccessor(t *testing.T) {
	inBubble(t, func(t *testing.T, ctx context.Context) {
		g := newRig(t, ctx, 200)
		log := newCallLog()
		victims := killWithDeletes(t, g, log, 5)
		g.waitFormed(time.Minute)
		g.sampleFor(5 * time.Second) // the opening waits for its replay
		log.check(t, g)
		log.mu.Lock()
		for _, v := range victims {
			if got := log.last["a"][string(v.(*corev1.ConfigMap).UID)]; !got.deleted {
				t.Errorf("a was not told of the delete of %s: %v", objName(v), log.hist[objName(v)])
			}
		}
		log.mu.Unlock()
		if s := g.replicas["a"].ring.Status(); s.Replayed < len(victims) || s.Unreplayed != 0 {
			t.Errorf("status: replayed %d, unreplayed %d, want ≥ %d and 0: %s", s.Replayed, s.Unreplayed, len(victims), s)
		}
		g.leaveAll()
	})
}

// Where the history is gone (compacted past the dead owner's position),
// the new owner says that deletes may have been lost, and takes the range
// over all the same.
func TestAnUnreplayableTakeoverIsReported(t *testing.T) {
	inBubble(t, func(t *testing.T, ctx context.Context) {
		g := newRig(t, ctx, 200)
		log := newCallLog()
		killWithDeletes(t, g, log, 3)
		objs, rv := g.cms.Objects()
		if len(objs) == 0 {
			t.Fatal("no objects")
		}
		if err := g.srv.Compact(rv); err != nil {
			t.Fatal(err)
		}
		g.waitFormed(time.Minute)
		g.sampleFor(5 * time.Second)
		s := g.replicas["a"].ring.Status()
		if s.Unreplayed == 0 || s.LastError == nil || !strings.Contains(s.LastError.Error(), "replaying the deletes") {
			t.Fatalf("the lost history is not reported: %s", s)
		}
		if !strings.Contains(s.String(), "without the deletes made while no one handled them") {
			t.Errorf("Status.String does not say it: %s", s)
		}
		g.leaveAll()
	})
}
