package cache

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The zero Shard, as a failed ReplicaShard returns it, is refused where
// the informer's options are given, not left to panic inside Run.
func TestInformerOptionsRefuseTheZeroShard(t *testing.T) {
	zero, err := ReplicaShard(3, 2)
	if err == nil || !zero.IsZero() {
		t.Fatalf("ReplicaShard(3, 2) = %v, %v; want the zero Shard and an error", zero, err)
	}
	func() {
		defer func() {
			p := recover()
			perr, ok := p.(error)
			if !ok || !errors.Is(perr, ErrInvalidShard) || !strings.Contains(perr.Error(), "NewSharedIndexInformerWith") {
				t.Errorf("NewSharedIndexInformerWith(zero shard) panicked with %v; want an error naming it and wrapping ErrInvalidShard", p)
			}
		}()
		NewSharedIndexInformerWith(ReflectorOptions{Shard: &zero})
	}()
	inf := NewSharedIndexInformer(newScript(nil, nil), &corev1.ConfigMap{}, 0, Indexers{}).(*sharedIndexInformer)
	if err := inf.SetReflectorOptions(ReflectorOptions{Shard: &zero}); !errors.Is(err, ErrInvalidShard) {
		t.Errorf("SetReflectorOptions(zero shard) = %v, want ErrInvalidShard", err)
	}
	if inf.reflectorOptions != nil {
		t.Error("a refused SetReflectorOptions changed the options")
	}
}

// panickyLW is a ListerWatcher whose IsWatchListSemanticsUnSupported,
// which the Reflector's constructor asks, panics.
type panickyLW struct{ *scriptLW }

func (panickyLW) IsWatchListSemanticsUnSupported() bool { panic("lister cannot tell") }

// A panic while Run builds the Reflector leaves Run (re-raised, as any
// panic in Run is) and leaves nothing locked: WaitForSync returns at
// once, with ErrNotSynced and ErrStopped, and so does WaitForShard, and
// Health says Stopped.
// Before, the controller's lock was
// held through the panic and Run's deferred log waited for it for ever,
// and so did WaitForSync. A goroutine blocked on a mutex is not durably
// blocked for synctest, so a bubble would hang rather than fail: the test
// runs on real time, and its bound only limits how long a failure takes.
func TestInformerConstructionPanicDoesNotWedge(t *testing.T) {
	zero := Shard{}
	cases := map[string]func() *sharedIndexInformer{
		// The options as an older SetReflectorOptions accepted them.
		"zero shard": func() *sharedIndexInformer {
			inf := NewSharedIndexInformer(newScript(nil, nil), &corev1.ConfigMap{}, 0, Indexers{}).(*sharedIndexInformer)
			inf.reflectorOptions = &ReflectorOptions{Shard: &zero}
			return inf
		},
		"panicking ListerWatcher": func() *sharedIndexInformer {
			return NewSharedIndexInformer(panickyLW{newScript(nil, nil)}, &corev1.ConfigMap{}, 0, Indexers{}).(*sharedIndexInformer)
		},
	}
	for name, build := range cases {
		t.Run(name, func(t *testing.T) {
			inf := build()
			panicked := make(chan any, 1)
			go func() {
				defer func() { panicked <- recover() }()
				inf.RunWithContext(t.Context())
			}()
			if p := within(t, panicked); p == nil {
				t.Fatal("Run returned without the construction's panic")
			}
			waited := make(chan any, 1)
			go func() { waited <- inf.WaitForSync(t.Context()) }()
			err, _ := within(t, waited).(error)
			if !errors.Is(err, ErrNotSynced) || !errors.Is(err, ErrStopped) {
				t.Fatalf("WaitForSync = %v, want ErrNotSynced and ErrStopped", err)
			}
			if h := inf.Health(); h.Reflector.State != Stopped || h.Reflector.HasSynced {
				t.Errorf("Health = %s, want the Reflector Stopped (none was built), never synced", fmt.Sprint(h.Reflector))
			}
			shardWaited := make(chan any, 1)
			go func() { shardWaited <- inf.WaitForShard(t.Context(), mustShard(t, 0, 2)) }()
			if err, _ := within(t, shardWaited).(error); !errors.Is(err, ErrNotSynced) || !errors.Is(err, ErrStopped) {
				t.Errorf("WaitForShard = %v, want ErrNotSynced and ErrStopped", err)
			}
		})
	}
}

// within receives from ch, failing the test if nothing comes within ten
// seconds (of real time: a bound on a hang, which succeeds at once).
func within(t *testing.T, ch <-chan any) any {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("still blocked after 10 s: a lock is held")
		return nil
	}
}
