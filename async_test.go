package cache

import (
	"errors"
	"testing"
	"testing/synctest"

	"k8s.io/apimachinery/pkg/watch"
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

func TestPendingCallRepanicsInWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := startCall(func() (int, error) { panic("lister exploded") }, nil)
		o := <-c.done
		defer func() {
			if p := recover(); p != "lister exploded" {
				t.Fatalf("recovered %v", p)
			}
		}()
		_, _ = o.result()
		t.Fatal("result must re-panic")
	})
}
