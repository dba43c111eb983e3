package cache

import (
	"context"
	"errors"
	goruntime "runtime"
	"strings"
	"testing"
	"testing/synctest"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kreflector/cache/cachetest"
)

func TestPendingCallDeliversResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		want := errors.New("boom")
		c := startCall(func() (int, error) { return 7, want }, nil)
		v, err := (<-c.done).result()
		if v != 7 || err != want {
			t.Fatalf("got %d, %v", v, err)
		}
	})
}

func TestPendingCallReleasesAbandonedResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		unblock := make(chan struct{})
		w := watch.NewFake()
		stopped := make(chan struct{})
		c := startCall(func() (watch.Interface, error) {
			<-unblock
			return w, nil
		}, func(got watch.Interface) {
			got.Stop()
			close(stopped)
		})
		c.giveUp()
		close(unblock)
		<-stopped
		if !w.IsStopped() {
			t.Fatal("an abandoned watch must be stopped")
		}
	})
}

// A call's panic is raised again in the waiter as a *ListerWatcherPanic
// carrying the value and the stack of the call's goroutine, which names
// the function that panicked.
func TestPendingCallRepanicsInWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := startCall(explodingCall, nil)
		o := <-c.done
		defer func() {
			p, ok := recover().(*ListerWatcherPanic)
			if !ok || p.Value != "lister exploded" {
				t.Fatalf("recovered %#v, want a *ListerWatcherPanic of the call's value", p)
			}
			if !strings.Contains(string(p.Stack), "cache.explodingCall(") || !strings.Contains(p.Error(), "cache.explodingCall(") {
				t.Fatalf("the stack does not show the frame that panicked:\n%s", p.Error())
			}
			if !strings.HasPrefix(p.Error(), "panic in a ListerWatcher call: lister exploded\n") {
				t.Fatalf("Error() = %q", p.Error())
			}
		}()
		_, _ = o.result()
		t.Fatal("result must re-panic")
	})
}

func explodingCall() (int, error) { panic("lister exploded") }

// An error the call panicked with is reachable through errors.Is/As.
func TestListerWatcherPanicUnwraps(t *testing.T) {
	boom := errors.New("boom")
	if p := (&ListerWatcherPanic{Value: boom}); !errors.Is(p, boom) {
		t.Error("a panic with an error does not unwrap to it")
	}
	if p := (&ListerWatcherPanic{Value: "text"}); p.Unwrap() != nil {
		t.Error("a panic with a string unwraps to something")
	}
}

// panickingListLW is a ListerWatcher whose List panics with a nil map
// write, a runtime.Error.
type panickingListLW struct{ *scriptLW }

func (panickingListLW) ListWithContext(context.Context, metav1.ListOptions) (runtime.Object, error) {
	var m map[string]int
	m["x"] = 1
	return nil, nil
}

// A Reflector whose ListerWatcher's List panics panics with the stack of
// the List call, and the runtime.Error is reachable.
func TestReflectorListPanicKeepsItsStack(t *testing.T) {
	lw := panickingListLW{&scriptLW{noWL: true}}
	r := NewReflector(lw, nil, cachetest.NewRecordingStore(nil), 0)
	defer func() {
		p, ok := recover().(*ListerWatcherPanic)
		var rerr goruntime.Error
		if !ok || !errors.As(p, &rerr) {
			t.Fatalf("recovered %#v, want a *ListerWatcherPanic wrapping a runtime.Error", p)
		}
		if !strings.Contains(p.Error(), "panickingListLW.ListWithContext(") {
			t.Fatalf("the panic does not show the frame that panicked:\n%s", p.Error())
		}
	}()
	_ = r.ListAndWatchWithContext(t.Context())
	t.Fatal("ListAndWatch must panic")
}
