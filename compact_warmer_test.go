package cache

import (
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"k8s.io/apimachinery/pkg/watch"
)

// With no read cache the handoff budget is nothing, so no object ever
// fits the warmer's half of it: the warmer must pass such handoffs by
// (their listeners decode them) rather than wait for room that never
// comes, while its queue keeps every later notification, and the records
// they hold, for the informer's lifetime.
func TestWarmerPassesByWhatCanNeverFit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw, inf := abcInformer()
		if err := inf.(ReflectorConfigurable).SetReflectorOptions(ReflectorOptions{Compact: &CompactOptions{ReadCacheBytes: -1}}); err != nil {
			t.Fatal(err)
		}
		var updates atomic.Int32
		if _, err := inf.AddEventHandler(ResourceEventHandlerFuncs{UpdateFunc: func(_, _ any) { updates.Add(1) }}); err != nil {
			t.Fatal(err)
		}
		defer runInformer(t, inf)()
		synctest.Wait()
		var events []watch.Event
		for i := range 200 {
			events = append(events, ev(watch.Modified, cm("a", strconv.Itoa(11+i))))
		}
		(&informerDriver{t: t, lw: lw}).send(events...)
		synctest.Wait()
		w := inf.(*sharedIndexInformer).processor.warm
		w.mu.Lock()
		left := len(w.queue) - w.head
		w.mu.Unlock()
		if n := updates.Load(); n != 200 || left > 0 {
			t.Fatalf("%d updates delivered, the warmer still queues %d handoffs", n, left)
		}
	})
}
