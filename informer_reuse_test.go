package cache

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	clientgofeatures "k8s.io/client-go/features"
	"k8s.io/utils/ptr"
)

// identityLog records an informer's updates, saying whether the handler got
// the same object as old and new, and its deletes.
type identityLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *identityLog) handler() ResourceEventHandler {
	return ResourceEventHandlerFuncs{
		UpdateFunc: func(old, obj interface{}) {
			l.add(fmt.Sprintf("UPDATE %s -> %s same=%v", describe(old), describe(obj), old == obj))
		},
		DeleteFunc: func(obj interface{}) { l.add("DELETE " + describe(obj)) },
	}
}

func (l *identityLog) add(call string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, call)
}

func (l *identityLog) sorted() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Sorted(slices.Values(l.calls))
}

// A relisting informer keeps the object its indexer holds for an unchanged
// item: the handler's update gets that object as old and new, and the
// transform does not see it again (it did when the object was stored, and
// listers may be reading it); a changed item is the new, transformed
// copy; a deleted one still gets its tombstone. With either RealFIFO mode,
// by LIST and by WatchList.
func TestInformerRelistReusesHeldObjects(t *testing.T) {
	base := clientgofeatures.FeatureGates()
	defer clientgofeatures.ReplaceFeatureGates(base)
	for _, atomicFIFO := range []bool{true, false} {
		for _, watchList := range []bool{false, true} {
			t.Run(fmt.Sprintf("atomic=%v%s", atomicFIFO, modeName(watchList)), func(t *testing.T) {
				clientgofeatures.ReplaceFeatureGates(base)
				if !atomicFIFO {
					clientgofeatures.ReplaceFeatureGates(gatesWithout{base: base, off: clientgofeatures.AtomicFIFO})
				}
				synctest.Test(t, func(t *testing.T) { checkInformerRelist(t, watchList, true) })
			})
		}
	}
}

// With ReuseHeldObjects false through SetReflectorOptions, every listed
// object is the new copy, as in client-go.
func TestInformerRelistReuseOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { checkInformerRelist(t, false, false) })
}

func checkInformerRelist(t *testing.T, watchList, reuse bool) {
	lw := relistLW(watchList)
	inf := NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, Indexers{})
	var transforms atomic.Int32
	if err := inf.SetTransform(func(o interface{}) (interface{}, error) {
		transforms.Add(1)
		return markTransformed(o)
	}); err != nil {
		t.Fatal(err)
	}
	if !reuse {
		if err := inf.(ReflectorConfigurable).SetReflectorOptions(ReflectorOptions{ReuseHeldObjects: ptr.To(false)}); err != nil {
			t.Fatal(err)
		}
	}
	log := &identityLog{}
	if _, err := inf.AddEventHandler(log.handler()); err != nil {
		t.Fatal(err)
	}
	stop := runInformer(t, inf)
	syncWith(t, lw, beforeRelist(), "10")
	before := contents(inf.GetStore())
	expire(t, lw)
	syncWith(t, lw, afterRelist(), "20")
	after := contents(inf.GetStore())
	stop()
	checkRelisted(t, before, after, reuse)
	want := []string{"DELETE tombstone(ns/c, c@3+T)", fmt.Sprintf("UPDATE a@1+T -> a@1+T same=%v", reuse), "UPDATE b@2+T -> b@5+T same=false"}
	if got := log.sorted(); !slices.Equal(got, want) {
		t.Errorf("handler calls:\n got %q\nwant %q", got, want)
	}
	// Each object is transformed once per sync (twice by WatchList, as
	// in client-go: as it arrives and in Replace), but a held one not.
	perSync := map[bool]int32{false: 1, true: 2}[watchList]
	wantCalls := perSync * 6
	if reuse {
		wantCalls = perSync * 5
	}
	if got := transforms.Load(); got != wantCalls {
		t.Errorf("transform called %d times, want %d", got, wantCalls)
	}
}
