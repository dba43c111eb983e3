package listdecode

import (
	"bytes"
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// TestOwnedItems: with Owned set, a streamed typed list's items are
// decoded into allocations of their own, handed to Owned once, in order,
// before Decode returns; Items holds equal copies (that have been through
// Item, as the allocations have), never the allocations themselves. The
// list is client-go's, as without Owned.
func TestOwnedItems(t *testing.T) {
	for _, n := range []int{40, parallelCopy + 5} { // more than two batches; enough to gather on every worker
		testOwnedItems(t, n)
	}
}

func testOwnedItems(t *testing.T, n int) {
	for ct, body := range map[string][]byte{ctJSON: jsonOf(t, podList(n)), ctProtobuf: protobufOf(t, podList(n), scheme.Scheme)} {
		want, wantErr := clientGo(t, Target{Typed: &corev1.PodList{}}, ct, body)
		mark := func(obj runtime.Object) { obj.(*corev1.Pod).Spec.Hostname = "seen" }
		if wantErr == nil {
			for i := range want.(*corev1.PodList).Items {
				mark(&want.(*corev1.PodList).Items[i])
			}
		}
		for _, workers := range []int{1, 2} {
			var calls int
			var gotList runtime.Object
			var own []runtime.Object
			o := Options{Workers: workers,
				Item:  mark,
				Owned: func(l runtime.Object, items []runtime.Object, _ []any) { calls, gotList, own = calls+1, l, items },
			}
			got, err := Decode(context.Background(), bytes.NewReader(body), Target{Typed: &corev1.PodList{}}, o)
			if err != nil || wantErr != nil {
				t.Fatalf("%s: %v (client-go: %v)", ct, err, wantErr)
			}
			list := got.(*corev1.PodList)
			if calls != 1 || gotList != got || len(own) != n {
				t.Fatalf("%s, %d workers: Owned called %d times, with the list returned: %v, %d items", ct, workers, calls, gotList == got, len(own))
			}
			for i := range list.Items {
				p := own[i].(*corev1.Pod)
				if p == &list.Items[i] || !reflect.DeepEqual(*p, list.Items[i]) || p.Spec.Hostname != "seen" {
					t.Fatalf("%s, %d workers: item %d: owned %p is not an equal copy of Items' %p, through Item", ct, workers, i, p, &list.Items[i])
				}
			}
			same(t, ct, got, nil, want, nil)
		}
	}
}

// TestOwnedNotCalled: an unstructured list, and a body decoded whole by
// the client's decoder, own nothing; Owned is not called.
func TestOwnedNotCalled(t *testing.T) {
	cases := map[string]struct {
		t    Target
		body []byte
	}{
		"unstructured":           {Target{Unstructured: true}, jsonOf(t, podList(3))},
		"a kind the list is not": {Target{Typed: &corev1.PodList{}}, protobufOf(t, &corev1.ServiceList{Items: []corev1.Service{{}}}, scheme.Scheme)},
	}
	for name, c := range cases {
		called := false
		_, _ = Decode(context.Background(), bytes.NewReader(c.body), c.t, Options{Workers: 2,
			Owned: func(runtime.Object, []runtime.Object, []any) { called = true }})
		if called {
			t.Errorf("%s: Owned was called", name)
		}
	}
}

// TestHeldItemsNotDecoded: with Held set, each item, protobuf or JSON, is
// asked for by its namespace, name and resourceVersion, in order, before
// it is decoded; those Held answers for are not decoded (zero in Items,
// nil in Owned's items, what Held gave in its held), the others are
// client-go's.
func TestHeldItemsNotDecoded(t *testing.T) {
	const n = 40
	src := podList(n)
	for _, workers := range []int{1, 2} {
		for ct, body := range map[string][]byte{ctProtobuf: protobufOf(t, src, scheme.Scheme), ctJSON: jsonOf(t, src)} {
			var asked []string
			var own []runtime.Object
			var held []any
			o := Options{Workers: workers,
				Owned: func(_ runtime.Object, items []runtime.Object, h []any) { own, held = items, h },
				Held: func(ns, name, rv string) (any, bool) {
					asked = append(asked, ns+"/"+name+"@"+rv)
					return "held " + name, len(asked)%3 == 0
				},
			}
			got, err := Decode(context.Background(), bytes.NewReader(body), Target{Typed: &corev1.PodList{}}, o)
			if err != nil {
				t.Fatal(err)
			}
			items := got.(*corev1.PodList).Items
			if len(asked) != n || len(own) != n || len(held) != n {
				t.Fatalf("%s, %d workers: asked %d times, %d owned, %d held; want %d", ct, workers, len(asked), len(own), len(held), n)
			}
			for i, p := range src.Items {
				if want := p.Namespace + "/" + p.Name + "@" + p.ResourceVersion; asked[i] != want {
					t.Fatalf("%s, %d workers: asked %q for item %d, want %q", ct, workers, asked[i], i, want)
				}
				if (i+1)%3 == 0 {
					if held[i] != "held "+p.Name || own[i] != nil || !reflect.DeepEqual(items[i], corev1.Pod{}) {
						t.Fatalf("%s, %d workers: item %d held %v, owned %v, in Items %q", ct, workers, i, held[i], own[i], items[i].Name)
					}
					continue
				}
				if held[i] != nil || own[i] == nil || !reflect.DeepEqual(*own[i].(*corev1.Pod), items[i]) || items[i].Name != p.Name {
					t.Fatalf("%s, %d workers: item %d was not decoded as client-go decodes it", ct, workers, i)
				}
			}
		}
	}
}

// TestHeldUnstructuredItemsNotDecoded: an unstructured JSON list with
// Held set is asked about each item in order; the items Held answers for
// are not decoded (held stands in, nil in Owned's items, and left empty
// in Items: no kind filled in), the others are as an unstructured list's
// decode without Held has them.
func TestHeldUnstructuredItemsNotDecoded(t *testing.T) {
	const n = 30
	src := podList(n)
	body := jsonOf(t, src)
	whole, err := Decode(context.Background(), bytes.NewReader(body), Target{Unstructured: true}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := whole.(*unstructured.UnstructuredList).Items
	for _, workers := range []int{1, 2} {
		var asked []string
		var own []runtime.Object
		var held []any
		o := Options{Workers: workers,
			Owned: func(_ runtime.Object, items []runtime.Object, h []any) { own, held = items, h },
			Held: func(ns, name, rv string) (any, bool) {
				asked = append(asked, ns+"/"+name+"@"+rv)
				return "held " + name, len(asked)%3 == 0
			},
		}
		list, err := Decode(context.Background(), bytes.NewReader(body), Target{Unstructured: true}, o)
		if err != nil {
			t.Fatal(err)
		}
		items := list.(*unstructured.UnstructuredList).Items
		if len(asked) != n || len(own) != n || len(held) != n {
			t.Fatalf("%d workers: asked %d times, %d owned, %d held; want %d", workers, len(asked), len(own), len(held), n)
		}
		for i, p := range src.Items {
			if w := p.Namespace + "/" + p.Name + "@" + p.ResourceVersion; asked[i] != w {
				t.Fatalf("%d workers: asked %q for item %d, want %q", workers, asked[i], i, w)
			}
			if (i+1)%3 == 0 {
				if held[i] != "held "+p.Name || own[i] != nil || items[i].Object != nil {
					t.Fatalf("%d workers: item %d held %v, owned %v, in Items %v", workers, i, held[i], own[i], items[i].Object)
				}
				continue
			}
			if held[i] != nil || own[i] == nil || !reflect.DeepEqual(own[i], &want[i]) {
				t.Fatalf("%d workers: item %d was not decoded as the whole list's decode has it", workers, i)
			}
		}
	}
}
