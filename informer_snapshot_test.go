package cache

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kreflector/cache/cachetest"
)

// snapshotRecorder records its calls as lines; the first update of gate
// blocks until release is closed, so that its backlog grows meanwhile.
type snapshotRecorder struct {
	mu      sync.Mutex
	lines   []string
	gate    string
	release chan struct{}
}

func (r *snapshotRecorder) log(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, s)
}

func (r *snapshotRecorder) OnAdd(obj interface{}, _ bool) {
	cm := obj.(*corev1.ConfigMap)
	r.log("add " + cm.Name + "@" + cm.ResourceVersion)
}

func (r *snapshotRecorder) OnUpdate(_, obj interface{}) {
	cm := obj.(*corev1.ConfigMap)
	r.log("update " + cm.Name + "@" + cm.ResourceVersion)
	if cm.Name == r.gate && r.release != nil {
		<-r.release
		r.release = nil
	}
}

func (r *snapshotRecorder) OnDelete(obj interface{}) {
	r.log("delete " + obj.(*corev1.ConfigMap).Name)
}

func (r *snapshotRecorder) OnSnapshot(s Snapshot) {
	var names []string
	for _, o := range s.Objects {
		cm := o.(*corev1.ConfigMap)
		names = append(names, cm.Name+"@"+cm.ResourceVersion)
	}
	slices.Sort(names)
	r.log(fmt.Sprintf("snapshot %v at %s: %v", s.Tag, s.ResourceVersion, names))
}

func (r *snapshotRecorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.lines)
}

// A snapshot reaches a handler between the notifications of the changes
// applied before it and those after, holding the objects as they were at
// that point, even when the handler is behind the store, and at the
// resourceVersion of the last change applied (a watch event's, deletes
// too); handlers that do not take snapshots get nothing. With the store
// decoded and compact (whose queue carries records).
func TestSnapshotComesInOrderWithTheNotifications(t *testing.T) {
	for _, compact := range []bool{false, true} {
		t.Run(fmt.Sprintf("compact=%v", compact), func(t *testing.T) { snapshotInOrder(t, compact) })
	}
}

func snapshotInOrder(t *testing.T, compact bool) {
	synctest.Test(t, func(t *testing.T) {
		srv := cachetest.NewServer(cachetest.Options{})
		defer srv.Close()
		cms := srv.Resource(cachetest.Type{Resource: "configmaps", Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}})
		ctx := t.Context()
		write := func(name, v string) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Data: map[string]string{"v": v}}
			if v == "0" {
				_, err := cms.Create(ctx, cm, metav1.CreateOptions{})
				must(t, err)
				return
			}
			_, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
			must(t, err)
		}
		write("a", "0") // 1
		write("b", "0") // 2
		var o ReflectorOptions
		if compact {
			o.Compact = &CompactOptions{}
		}
		inf := NewSharedIndexInformerWith(o)(cms, &corev1.ConfigMap{}, 0, Indexers{})
		rec := &snapshotRecorder{gate: "a", release: make(chan struct{})}
		plain := &snapshotRecorder{}
		_, err := inf.AddEventHandler(rec)
		must(t, err)
		_, err = inf.AddEventHandler(ResourceEventHandlerFuncs{AddFunc: func(interface{}) { plain.log("add") }})
		must(t, err)
		q := inf.(SnapshotQueuer)
		q.QueueSnapshot(func(interface{}) bool { return true }, "before")
		defer runInformer(t, inf)()
		synctest.Wait()
		write("a", "1") // 3: the handler blocks in this update
		synctest.Wait()
		write("b", "1") // 4
		synctest.Wait()
		q.QueueSnapshot(func(o interface{}) bool { return o.(*corev1.ConfigMap).Name == "b" }, "now")
		_, err = cms.Delete(ctx, "ns", "b", metav1.DeleteOptions{}) // 5
		must(t, err)
		synctest.Wait()
		close(rec.release)
		synctest.Wait()
		q.QueueSnapshot(func(interface{}) bool { return true }, "after")
		synctest.Wait()
		want := []string{
			"snapshot before at : []", "add a@1", "add b@2", "update a@3", "update b@4",
			"snapshot now at 4: [b@4]", "delete b", "snapshot after at 5: [a@3]",
		}
		if got := rec.got(); !slices.Equal(got, want) {
			t.Fatalf("calls:\n%v\nwant:\n%v", got, want)
		}
		if got := plain.got(); len(got) != 2 {
			t.Fatalf("the plain handler got %v, want only its two adds", got)
		}
		time.Sleep(time.Second)
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
