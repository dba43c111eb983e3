package cache

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kreflector/cache/internal/compact"
	"github.com/kreflector/cache/internal/podgen"
)

// TestCompactIncompressibleRecordSurvivesReads holds a Secret whose data
// does not compress (its record keeps the encoding as it is) beside Pods
// that do, and reads them in turn with no read cache: decoding a record
// must never lend its bytes out as room to expand another into.
func TestCompactIncompressibleRecordSurvivesReads(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	noise := make([]byte, 8000)
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tls", ResourceVersion: "7", UID: "u-1"},
		Data:       map[string][]byte{"tls.key": noise},
	}
	secrets := NewCompactIndexer(MetaNamespaceKeyFunc, Indexers{}, CompactOptions{ReadCacheBytes: -1})
	pods := NewCompactIndexer(MetaNamespaceKeyFunc, Indexers{}, CompactOptions{ReadCacheBytes: -1})
	if err := secrets.Add(secret.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	pod := podgen.Pod(1, 10)
	if err := pods.Add(pod.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	for range 50 {
		got, ok, err := secrets.GetByKey("ns/tls")
		if err != nil || !ok {
			t.Fatalf("secret: %v, %v", ok, err)
		}
		if s := got.(*corev1.Secret); !reflect.DeepEqual(s.Data, secret.Data) || s.Name != "tls" {
			t.Fatal("the Secret read back is not the one stored")
		}
		if _, ok, err := pods.GetByKey(pod.Namespace + "/" + pod.Name); err != nil || !ok {
			t.Fatalf("pod %s: %v, %v", pod.Namespace+"/"+pod.Name, ok, err)
		}
	}
}

// A compact store holds a record per object: it must stay within the
// 128-byte size class (the next one is 144 bytes, a ninth more per
// object for every compact user).
func TestCompactRecordSize(t *testing.T) {
	if n := unsafe.Sizeof(compactRecord{}); n > 112 {
		t.Fatalf("a compactRecord takes %d bytes: more than the 112-byte size class", n)
	}
}

// A read of many records decodes them on several goroutines: every
// object comes back once, and a record that no longer decodes (damaged
// here by hand; not expected in use) is left out of List and ByIndex,
// while GetByKey says why.
func TestCompactReadOfManyLeavesOutWhatDoesNotDecode(t *testing.T) {
	s := newCompactStore(MetaNamespaceKeyFunc, compactIndexers(), CompactOptions{ReadCacheBytes: -1})
	const n = 200
	for i := range n {
		p := podgen.Pod(i, 10)
		p.Spec.NodeName = "node-a"
		if err := s.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	victim := podgen.Pod(77, 10)
	key := victim.Namespace + "/" + victim.Name
	r, _ := s.record(key)
	r.data = compact.Frozen([]byte{0xff, 1, 2, 3}) // no form Squeeze writes
	for name, list := range map[string]func() ([]any, error){
		"List":    func() ([]any, error) { return s.List(), nil },
		"ByIndex": func() ([]any, error) { return s.ByIndex("node", "node-a") },
	} {
		objs, err := list()
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, o := range objs {
			p := o.(*corev1.Pod)
			seen[p.Namespace+"/"+p.Name] = true
		}
		if len(objs) != n-1 || len(seen) != n-1 || seen[key] {
			t.Errorf("%s: %d objects, %d apart, the damaged one among them: %v", name, len(objs), len(seen), seen[key])
		}
	}
	if _, _, err := s.GetByKey(key); err == nil {
		t.Error("GetByKey of the damaged record did not fail")
	}
}

// A typed object's metav1.Time comes back whole seconds once decoded,
// as the CompactOptions doc says: protobuf carries no fraction of them.
func TestCompactTimesComeBackWholeSeconds(t *testing.T) {
	at := time.Date(2024, 1, 2, 3, 4, 5, 6e8, time.Local)
	s := NewCompactIndexer(MetaNamespaceKeyFunc, Indexers{}, CompactOptions{ReadCacheBytes: -1})
	if err := s.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", CreationTimestamp: metav1.NewTime(at)}}); err != nil {
		t.Fatal(err)
	}
	got, _, err := s.GetByKey("ns/a")
	if err != nil {
		t.Fatal(err)
	}
	if ts := got.(*corev1.ConfigMap).CreationTimestamp.Time; !ts.Equal(at.Truncate(time.Second)) {
		t.Fatalf("read back %v, stored %v", ts, at)
	}
}

// A handler is never given a record: a notification whose record no
// longer decodes (not expected: it decoded when packed; damaged here by
// hand) is logged and not delivered, and the handler goes on.
func TestCompactHandlerIsNeverGivenARecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw, inf := abcInformer()
		if err := inf.(ReflectorConfigurable).SetReflectorOptions(ReflectorOptions{Compact: &CompactOptions{ReadCacheBytes: -1}}); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var got []string
		if _, err := inf.AddEventHandler(ResourceEventHandlerFuncs{
			UpdateFunc: func(old, obj any) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, old.(*corev1.ConfigMap).ResourceVersion+"->"+obj.(*corev1.ConfigMap).ResourceVersion)
			},
		}); err != nil {
			t.Fatal(err)
		}
		defer runInformer(t, inf)()
		synctest.Wait()
		heldRecord(inf, "ns/a").data = compact.Frozen([]byte{0xff, 1, 2, 3}) // no form Squeeze writes
		d := &informerDriver{t: t, lw: lw}
		d.send(ev(watch.Modified, cm("a", "11")), ev(watch.Modified, cm("b", "12")))
		mu.Lock()
		defer mu.Unlock()
		if want := []string{"6->12"}; !slices.Equal(got, want) {
			t.Fatalf("handler got %q, want %q", got, want)
		}
	})
}
