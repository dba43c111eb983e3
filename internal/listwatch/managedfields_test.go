package listwatch_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	goruntime "runtime"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	restclient "k8s.io/client-go/rest"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache/internal/lean"
	"github.com/kreflector/cache/internal/listhint"
	"github.com/kreflector/cache/internal/listwatch"
	"github.com/kreflector/cache/internal/podgen"
)

// protobufPods is the ListWatch of a protobuf clientset's Pods on a server
// that answers every request with body, of the given Content-Type; the
// server is closed when t ends.
func protobufPods(t *testing.T, contentType string, body []byte) *clientgocache.ListWatch {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Write(body)
	}))
	t.Cleanup(hs.Close)
	cs := kubernetes.NewForConfigOrDie(&restclient.Config{Host: hs.URL, ContentConfig: restclient.ContentConfig{
		ContentType: "application/vnd.kubernetes.protobuf", AcceptContentTypes: "application/vnd.kubernetes.protobuf"}})
	return listwatch.Typed(cs.CoreV1().Pods(""), "pods", nil)
}

// listedPods is how many Pods twentyProtobufPods serves.
const listedPods = 20

// twentyProtobufPods is protobufPods serving a protobuf list of
// listedPods realistic Pods.
func twentyProtobufPods(t *testing.T) *clientgocache.ListWatch {
	list := &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: "9"}}
	for i := range listedPods {
		list.Items = append(list.Items, *podgen.Pod(i, 9))
	}
	var body bytes.Buffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(list, &body); err != nil {
		t.Fatal(err)
	}
	return protobufPods(t, "application/vnd.kubernetes.protobuf", body.Bytes())
}

// A LIST under a hint that says managedFields are dropped anyway decodes
// protobuf Pods without them, even with no item function to drop them;
// without the hint they are decoded.
func TestListLeavesOutManagedFieldsWhenTheHintSaysSo(t *testing.T) {
	lw := twentyProtobufPods(t)
	for _, leaveOut := range []bool{false, true} {
		ctx, h := listhint.With(context.Background(), nil, leaveOut)
		obj, err := lw.ListWithContext(ctx, metav1.ListOptions{})
		h.Close()
		if err != nil {
			t.Fatal(err)
		}
		pods := obj.(*corev1.PodList).Items
		if len(pods) != listedPods {
			t.Fatalf("%d Pods listed, want %d", len(pods), listedPods)
		}
		for _, p := range pods {
			if got := len(p.ManagedFields) > 0; got == leaveOut {
				t.Fatalf("leaving out %v: Pod %s has %d managedFields entries", leaveOut, p.Name, len(p.ManagedFields))
			}
		}
	}
}

// A WATCH under such a hint decodes protobuf Pods without managedFields
// too; without the hint they are decoded.
func TestWatchLeavesOutManagedFieldsWhenTheHintSaysSo(t *testing.T) {
	enc := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	var stream bytes.Buffer
	for i := range 5 {
		var obj bytes.Buffer
		pod := podgen.Pod(i, 10+i)
		pod.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"} // as kube-apiserver encodes it
		if err := enc.Encode(pod, &obj); err != nil {
			t.Fatal(err)
		}
		ev := metav1.WatchEvent{Type: "ADDED", Object: runtime.RawExtension{Raw: obj.Bytes()}}
		frame, err := ev.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		stream.Write(binary.BigEndian.AppendUint32(nil, uint32(len(frame))))
		stream.Write(frame)
	}
	lw := protobufPods(t, "application/vnd.kubernetes.protobuf;stream=watch", stream.Bytes())
	for _, leaveOut := range []bool{false, true} {
		ctx, h := listhint.With(context.Background(), nil, leaveOut)
		w, err := lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: "9"})
		if err != nil {
			t.Fatal(err)
		}
		n, with := 0, 0
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				t.Fatalf("event %s %T %v", ev.Type, ev.Object, ev.Object)
			}
			if len(p.ManagedFields) > 0 {
				with++
			}
			n++
		}
		w.Stop()
		h.Close()
		if n != 5 {
			t.Fatalf("%d events, want 5", n)
		}
		// Each decode worker learns the Pod's type from the chain's
		// decode of its first Pod, which keeps them.
		if leaveOut && with > min(goruntime.GOMAXPROCS(0), n-1) || !leaveOut && with != n {
			t.Fatalf("leaving out %v: %d of %d Pods have managedFields", leaveOut, with, n)
		}
	}
}

// A server that answers the metadata client's LIST with the full objects
// (it ignores the PartialObjectMetadataList it was asked for, as some
// aggregated API servers do) gets a list the client decodes as
// PartialObjectMetadata: its items go through the hint's item function
// all the same, since the list is marked as having been through it.
func TestMetadataFallbackItemsGoThroughTheItemFunction(t *testing.T) {
	list := &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: "9"}}
	for i := range 3 {
		list.Items = append(list.Items, *podgen.Pod(i, 9))
	}
	body, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	defer hs.Close()
	mc := metadata.NewForConfigOrDie(&restclient.Config{Host: hs.URL})
	lw := listwatch.Metadata(mc, corev1.SchemeGroupVersion.WithResource("pods"), "", nil)
	var seen atomic.Int32
	ctx, h := listhint.With(context.Background(), func(obj runtime.Object) {
		seen.Add(1)
		lean.DropManagedFields(obj)
	}, false)
	defer h.Close()
	obj, err := lw.ListWithContext(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	items := obj.(*metav1.PartialObjectMetadataList).Items
	if len(items) != 3 || seen.Load() != 3 || !h.TookItems(obj) {
		t.Fatalf("%d items, %d through the item function, list marked %v; want 3, 3, true", len(items), seen.Load(), h.TookItems(obj))
	}
	for _, p := range items {
		if p.ManagedFields != nil {
			t.Fatalf("%s kept its managedFields", p.Name)
		}
	}
}

// A LIST under a hint reports its items as owned: equal to Items, each
// in an allocation of its own; without a hint nothing is owned.
func TestListReportsOwnedItemsUnderAHint(t *testing.T) {
	lw := twentyProtobufPods(t)
	ctx, h := listhint.With(context.Background(), nil, false)
	defer h.Close()
	obj, err := lw.ListWithContext(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	items := obj.(*corev1.PodList).Items
	owned, _ := h.TakeOwned(obj)
	if len(owned) != len(items) || len(items) != listedPods {
		t.Fatalf("%d items owned of %d, want %d", len(owned), len(items), listedPods)
	}
	for i := range items {
		if p := owned[i].(*corev1.Pod); p == &items[i] || !reflect.DeepEqual(*p, items[i]) {
			t.Fatalf("owned item %d is not an equal copy of Items'", i)
		}
	}
	if again, _ := h.TakeOwned(obj); again != nil {
		t.Fatal("TakeOwned did not forget the list")
	}
}

// A LIST under a hint offering a lookup of held objects asks it for each
// protobuf Pod and does not decode those it answers for: Owned's report
// carries the stand-ins in their places.
func TestListAsksForHeldItemsUnderAHint(t *testing.T) {
	lw := twentyProtobufPods(t)
	ctx, h := listhint.With(context.Background(), nil, false)
	defer h.Close()
	asked := 0
	h.OfferHeld(func(ns, name, rv string) (any, bool) {
		asked++
		return "held " + ns + "/" + name + "@" + rv, asked%2 == 0
	})
	obj, err := lw.ListWithContext(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	items := obj.(*corev1.PodList).Items
	owned, held := h.TakeOwned(obj)
	if asked != listedPods || len(held) != listedPods || len(owned) != listedPods {
		t.Fatalf("asked %d times, %d stand-ins, %d owned; want %d", asked, len(held), len(owned), listedPods)
	}
	for i := range items {
		p := podgen.Pod(i, 9)
		if i%2 == 1 {
			if want := "held " + p.Namespace + "/" + p.Name + "@9"; held[i] != want || owned[i] != nil || items[i].Name != "" {
				t.Fatalf("item %d: stand-in %v, owned %v, decoded %q", i, held[i], owned[i], items[i].Name)
			}
		} else if held[i] != nil || owned[i] == nil || items[i].Name != p.Name {
			t.Fatalf("item %d was not decoded", i)
		}
	}
}
