package cache

import (
	"context"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/kreflector/cache/cachetest"
)

// FuzzReflectorEvents feeds arbitrary watch event sequences (malformed
// objects, wrong types, nil objects, missing, garbage and out-of-order
// resourceVersions, unknown event types, Status errors) to a Reflector and
// checks that it does not panic, hands the store only ConfigMaps, never
// invents or reorders events, applies every well-formed event of a plain
// watch, and stops cleanly with no goroutine left.
//
//	go test -fuzz FuzzReflectorEvents -fuzztime 30s .
func FuzzReflectorEvents(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0x12, 1, 0, 0x13, 2, 0, 0x12})             // ADDED, MODIFIED, DELETED in order
	f.Add([]byte{1, 0, 0, 0x10, 0, 0, 0x11, 3, 7, 0x12, 1, 0, 0x13}) // WatchList: two ADDED, end bookmark, MODIFIED
	f.Add([]byte{0, 0, 0, 0x12, 4, 4, 0, 0, 0, 0x13})                // an ERROR event (410) between events
	f.Add([]byte{0, 0, 0, 0x00, 1, 0, 0x08, 0, 0, 0x1f, 0, 0, 0x1a}) // missing, garbage, out-of-order RVs
	f.Add([]byte{0, 0, 1, 0, 0, 3, 0, 0, 6, 0, 0, 8, 0, 0, 5, 0})    // nil, Pod, Unstructured, list, nameless
	f.Add([]byte{0, 5, 0, 0x12, 6, 0, 0x12, 3, 3, 0, 7, 0, 0, 0, 0, 0x14})
	f.Add([]byte{1, 0, 0, 0x12, 7, 0, 0, 3, 7, 0x12, 2, 4, 0x05})
	// Found by the fuzzer: nil pointers of object types panicked the
	// Reflector (a ConfigMap bookmark, an ERROR event's Status, an
	// Unstructured).
	f.Add([]byte{0, 3, 2, 0})
	f.Add([]byte{0, 4, 9, 0})
	f.Add([]byte{0, 0, 10, 0, 1, 2, 0x10})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || len(data) > 1+3*200 {
			return
		}
		synctest.Test(t, func(t *testing.T) { checkReflectorOnEvents(t, decodeFuzzInput(data)) })
	})
}

// fuzzInput is a decoded fuzz input: the mode, and the events of each
// watch in turn.
type fuzzInput struct {
	watchList bool
	batches   [][]watch.Event
}

// decodeFuzzInput reads a mode byte, then three bytes per event: the type
// (7 ends the current watch instead), the object, and a byte choosing the
// name and the form of the resourceVersion.
func decodeFuzzInput(data []byte) fuzzInput {
	in := fuzzInput{watchList: data[0]&1 == 1, batches: [][]watch.Event{nil}}
	seq := 100
	for i := 1; i+2 < len(data); i += 3 {
		kind, objSel, meta := data[i]%8, data[i+1]%11, data[i+2]
		if kind == 7 {
			in.batches = append(in.batches, nil)
			continue
		}
		types := []watch.EventType{watch.Added, watch.Modified, watch.Deleted, watch.Bookmark, watch.Error, "WEIRD", ""}
		seq++
		ev := watch.Event{Type: types[kind], Object: fuzzObject(objSel, meta, seq)}
		in.batches[len(in.batches)-1] = append(in.batches[len(in.batches)-1], ev)
	}
	return in
}

func fuzzObject(sel, meta byte, seq int) runtime.Object {
	name := "n" + strconv.Itoa(int(meta%8))
	rv := []string{"", "garbage", strconv.Itoa(seq), strconv.Itoa(int(meta))}[meta>>3%4]
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	switch sel {
	case 1:
		return nil
	case 2:
		return (*corev1.ConfigMap)(nil)
	case 3:
		return &corev1.Pod{ObjectMeta: cm.ObjectMeta}
	case 4:
		codes := []*apierrors.StatusError{apierrors.NewResourceExpired("too old"), apierrors.NewInternalError(errFuzz), apierrors.NewTooManyRequests("slow down", 1), apierrors.NewForbidden(corev1.Resource("configmaps"), "", errFuzz)}
		s := codes[int(meta)%len(codes)].Status()
		return &s
	case 5:
		cm.Name = ""
	case 6:
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.SetName(name)
		u.SetResourceVersion(rv)
		return u
	case 7:
		cm.Name, cm.Namespace = "", ""
		cm.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	case 8:
		return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}
	case 9:
		return (*metav1.Status)(nil)
	case 10:
		return (*unstructured.Unstructured)(nil)
	}
	return cm
}

var errFuzz = apierrors.NewBadRequest("fuzz")

// fuzzLister is the scripted ListerWatcher of one fuzz input: every LIST
// answers the same two ConfigMaps, each WATCH serves the next batch and
// closes; once they are used up, watches stay open and silent, and the
// first such closes drained.
func fuzzLister(in fuzzInput) *scriptLW {
	var watches []watchReply
	for _, b := range in.batches {
		watches = append(watches, watchReply{events: b})
	}
	lw := newScript(nil, watches)
	lw.listAgain = &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}, Items: []corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "listed-a", ResourceVersion: "9"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "listed-b", ResourceVersion: "10"}},
	}}
	return lw
}

func checkReflectorOnEvents(t *testing.T, in fuzzInput) {
	store := cachetest.NewRecordingStore(nil)
	quiet := logr.Discard()
	lw := fuzzLister(in)
	r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store,
		ReflectorOptions{Logger: &quiet, UseWatchList: &in.watchList})
	// stop returns once RunWithContext has: a Reflector that does not stop
	// deadlocks the bubble, which fails the test.
	_, stop := startRun(t, func(ctx context.Context) { r.RunWithContext(klog.NewContext(ctx, quiet)) })
	select {
	case <-lw.drained:
		synctest.Wait() // the Reflector has applied everything it will
	case <-time.After(24 * time.Hour):
		t.Error("the Reflector stopped asking for watches before using up the input")
	}
	stop()
	calls := store.Calls()
	checkStoreTypes(t, calls)
	checkNoInventedEvents(t, calls, in)
	if !in.watchList {
		checkNoLostEvents(t, calls, in)
	}
}

func isConfigMap(obj interface{}) bool {
	c, ok := obj.(*corev1.ConfigMap)
	return ok && c != nil
}

// checkStoreTypes: the store only ever gets ConfigMaps.
func checkStoreTypes(t *testing.T, calls []cachetest.StoreCall) {
	for _, c := range calls {
		if storeOpIsData(c.Op) && !isConfigMap(c.Object) {
			t.Fatalf("%s with %T", c.Op, c.Object)
		}
		if c.Op != cachetest.OpReplace {
			continue
		}
		for _, o := range c.Items {
			if !isConfigMap(o) {
				t.Fatalf("Replace with a %T item", o)
			}
		}
	}
}

// storeOp is the store call a data event leads to.
var storeOp = map[watch.EventType]cachetest.StoreOp{watch.Added: cachetest.OpAdd, watch.Modified: cachetest.OpUpdate, watch.Deleted: cachetest.OpDelete}

// checkNoInventedEvents: Add, Update and Delete calls follow the input
// events, in order, object for object.
func checkNoInventedEvents(t *testing.T, calls []cachetest.StoreCall, in fuzzInput) {
	var events []watch.Event
	for _, b := range in.batches {
		events = append(events, b...)
	}
	next := 0
	for _, c := range calls {
		if storeOpIsData(c.Op) {
			for next < len(events) && (events[next].Object != c.Object || storeOp[events[next].Type] != c.Op) {
				next++
			}
			if next == len(events) {
				t.Fatalf("store call %s %s matches no later input event", c.Op, objectID(c.Object))
			}
			next++
		}
	}
}

func storeOpIsData(op cachetest.StoreOp) bool {
	return op == cachetest.OpAdd || op == cachetest.OpUpdate || op == cachetest.OpDelete
}

// checkNoLostEvents: with plain watches, every ConfigMap event of a known
// type that precedes the first ERROR event of its watch reaches the store.
func checkNoLostEvents(t *testing.T, calls []cachetest.StoreCall, in fuzzInput) {
	var want []watch.Event
	for _, b := range in.batches {
		for _, ev := range b {
			if ev.Type == watch.Error {
				break
			}
			if _, data := storeOp[ev.Type]; data && isConfigMap(ev.Object) {
				want = append(want, ev)
			}
		}
	}
	var got []cachetest.StoreCall
	for _, c := range calls {
		if storeOpIsData(c.Op) {
			got = append(got, c)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("the store got %d data calls, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Object != want[i].Object || got[i].Op != storeOp[want[i].Type] {
			t.Fatalf("data call %d is %s %s, want %s of the input object", i, got[i].Op, objectID(got[i].Object), want[i].Type)
		}
	}
}
