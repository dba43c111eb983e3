package cache

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache/cachetest"
)

// waitForShardIn calls WaitForShard(s) on w in a goroutine of its own,
// with a context that never ends, and returns the channel its result
// comes on.
func waitForShardIn(w Resharder, s Shard) <-chan error {
	done := make(chan error, 1)
	go func() { done <- w.WaitForShard(context.Background(), s) }()
	return done
}

// checkStoppedShardWait fails t unless err is the error of a WaitForShard
// that returned because its Reflector or informer stopped.
func checkStoppedShardWait(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, ErrStopped) || !errors.Is(err, ErrNotSynced) {
		t.Errorf("%s: WaitForShard = %v; want ErrStopped and ErrNotSynced", what, err)
	}
}

// A WaitForShard on a Reflector that stops before it syncs the shard
// returns then, not when its context ends, and one called afterwards
// returns at once; the shard it did sync is still reported synced.
func TestReflectorWaitForShardReturnsWhenStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		old, next := mustShard(t, 0, 2), mustShard(t, 1, 2)
		// The first LIST answers; the LIST of the new shard never does.
		lw := newScript([]listReply{{list: echoed(cmList("5", ""), old)}}, nil)
		r := newShardedReflector(lw, cachetest.NewRecordingStore(nil), old, false)
		_, stop := startReflector(t, r)
		synctest.Wait()
		must(t, r.SetShard(next))
		waiting := waitForShardIn(r, next)
		synctest.Wait()
		stop()
		synctest.Wait()
		checkStoppedShardWait(t, "a wait in progress", <-waiting)
		checkStoppedShardWait(t, "a wait after the stop", r.WaitForShard(context.Background(), next))
		if err := r.WaitForShard(context.Background(), old); err != nil {
			t.Errorf("WaitForShard of the shard synced before the stop = %v", err)
		}
	})
}

// The same for an informer: a wait in progress returns when it stops, and
// one called afterwards at once.
func TestInformerWaitForShardReturnsWhenStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		old, next := mustShard(t, 0, 2), mustShard(t, 1, 2)
		lw := newScript([]listReply{{list: echoed(cmList("5", ""), old)}}, nil)
		inf := NewSharedIndexInformerWith(ReflectorOptions{Shard: &old, UseWatchList: ptr.To(false)})(lw, &corev1.ConfigMap{}, 0, Indexers{})
		stop := runInformer(t, inf)
		synctest.Wait()
		rs := inf.(Resharder)
		must(t, rs.SetShard(next))
		waiting := waitForShardIn(rs, next)
		synctest.Wait()
		stop()
		synctest.Wait()
		checkStoppedShardWait(t, "a wait in progress", <-waiting)
		checkStoppedShardWait(t, "a wait after the stop", rs.WaitForShard(context.Background(), next))
		if err := rs.WaitForShard(context.Background(), old); err != nil {
			t.Errorf("WaitForShard of the shard synced before the stop = %v", err)
		}
	})
}
