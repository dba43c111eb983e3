package cache

import (
	"strconv"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// A handler's backlog that grew with the initial list's burst gives its
// room back once it drains; a small one keeps its buffer for reuse.
func TestListenerBacklogShrinksWhenDrained(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 3000
		var items []*corev1.ConfigMap
		for i := range n {
			items = append(items, cm("o"+strconv.Itoa(i), strconv.Itoa(i+1)))
		}
		lw := &scriptLW{noWL: true, lists: []listReply{{list: cmList(strconv.Itoa(n+1), "", items...)}}}
		inf := NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, Indexers{})
		release := make(chan struct{})
		reg, err := inf.AddEventHandler(ResourceEventHandlerFuncs{AddFunc: func(interface{}) { <-release }})
		if err != nil {
			t.Fatal(err)
		}
		l := reg.(*listener)
		stop := runInformer(t, inf)
		defer stop()
		synctest.Wait()
		if got := l.pending(); got != n-1 {
			t.Fatalf("backlog %d while the handler is stuck in its first call, want %d", got, n-1)
		}
		close(release)
		synctest.Wait()
		if c := backlogCap(l); c > keptBacklog {
			t.Errorf("drained backlog keeps room for %d notifications, want at most %d", c, keptBacklog)
		}
		d := &informerDriver{t: t, lw: lw}
		d.send(ev(watch.Added, cm("late", strconv.Itoa(n+2))))
		if c := backlogCap(l); c == 0 || c > keptBacklog {
			t.Errorf("after one more event the backlog has room for %d, want 1..%d (kept for reuse)", c, keptBacklog)
		}
	})
}

func backlogCap(l *listener) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return cap(l.backlog)
}
