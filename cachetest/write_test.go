package cachetest_test

import (
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache/cachetest"
)

func TestCreateAssignsResourceVersionUIDAndTimestamp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cms := newServer(t, cachetest.Options{})
		time.Sleep(90 * time.Second)
		out, err := cms.Create(t.Context(), cm("ns", "a"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := out.(*corev1.ConfigMap)
		if got.ResourceVersion != "1" || srv.ResourceVersion() != "1" {
			t.Fatalf("resourceVersion %q, server at %q; want 1", got.ResourceVersion, srv.ResourceVersion())
		}
		if got.UID == "" || !got.CreationTimestamp.Time.Equal(time.Now().Truncate(time.Second)) {
			t.Fatalf("uid %q, creationTimestamp %v", got.UID, got.CreationTimestamp)
		}
		keep := cm("ns", "b")
		keep.UID = "given"
		out, _ = cms.Create(t.Context(), keep, metav1.CreateOptions{})
		if out.(*corev1.ConfigMap).UID != "given" || out.(*corev1.ConfigMap).ResourceVersion != "2" {
			t.Fatalf("got %+v", out.(*corev1.ConfigMap).ObjectMeta)
		}
	})
}

func TestCreateErrors(t *testing.T) {
	_, cms := newServer(t, cachetest.Options{})
	ctx := t.Context()
	create(t, cms, "ns/a")
	if _, err := cms.Create(ctx, cm("ns", "a"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("duplicate: %v, want AlreadyExists", err)
	}
	if _, err := cms.Create(ctx, cm("ns", ""), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("no name: %v, want Invalid", err)
	}
	if _, err := cms.Create(ctx, &corev1.Pod{}, metav1.CreateOptions{}); !apierrors.IsBadRequest(err) {
		t.Errorf("wrong type: %v, want BadRequest", err)
	}
	if _, err := cms.Create(ctx, cm("", "x"), metav1.CreateOptions{}); !apierrors.IsBadRequest(err) {
		t.Errorf("no namespace: %v, want BadRequest", err)
	}
	if _, err := cms.Namespace("other").Create(ctx, cm("ns", "x"), metav1.CreateOptions{}); !apierrors.IsBadRequest(err) {
		t.Errorf("namespace mismatch: %v, want BadRequest", err)
	}
	out, err := cms.Namespace("scoped").Create(ctx, cm("", "x"), metav1.CreateOptions{})
	if err != nil || id(out) != "scoped/x@2" {
		t.Errorf("scoped create: %v %v, want scoped/x@2", id(out), err)
	}
	gen := cm("ns", "")
	gen.GenerateName = "gen-"
	out, err = cms.Create(ctx, gen, metav1.CreateOptions{})
	if err != nil || len(out.(*corev1.ConfigMap).Name) != len("gen-")+5 {
		t.Errorf("generateName: %v %v", out, err)
	}
}

func TestObjectsAreCopiedInAndOut(t *testing.T) {
	_, cms := newServer(t, cachetest.Options{})
	ctx := t.Context()
	in := cm("ns", "a")
	in.Data = map[string]string{"k": "v"}
	out, _ := cms.Create(ctx, in, metav1.CreateOptions{})
	in.Data["k"] = "changed through the argument"
	out.(*corev1.ConfigMap).Data["k"] = "changed through the result"
	got, _ := cms.Get(ctx, "ns", "a", metav1.GetOptions{})
	got.(*corev1.ConfigMap).Data["k"] = "changed through Get"
	objs, _ := cms.Objects()
	objs[0].(*corev1.ConfigMap).Data["k"] = "changed through Objects"
	list, _ := cms.List(metav1.ListOptions{})
	list.(*corev1.ConfigMapList).Items[0].Data["k"] = "changed through List"
	got, _ = cms.Get(ctx, "ns", "a", metav1.GetOptions{})
	if v := got.(*corev1.ConfigMap).Data["k"]; v != "v" {
		t.Fatalf("server state changed by a caller: %q", v)
	}
	if in.ResourceVersion != "" {
		t.Fatal("Create must not modify its argument")
	}
}

func TestUpdateSemantics(t *testing.T) {
	_, cms := newServer(t, cachetest.Options{})
	ctx := t.Context()
	create(t, cms, "ns/a")
	stale := cm("ns", "a")
	stale.ResourceVersion = "1"
	stale.Data = map[string]string{"v": "1"}
	if out, err := cms.Update(ctx, stale, metav1.UpdateOptions{}); err != nil || id(out) != "ns/a@2" {
		t.Fatalf("update at the current RV: %v %v", id(out), err)
	}
	stale.Data["v"] = "2"
	if _, err := cms.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("update at a stale RV: %v, want Conflict", err)
	}
	unconditional := cm("ns", "a")
	unconditional.Data = map[string]string{"v": "3"}
	out, err := cms.Update(ctx, unconditional, metav1.UpdateOptions{})
	if err != nil || id(out) != "ns/a@3" || out.(*corev1.ConfigMap).UID == "" {
		t.Fatalf("unconditional update: %v %v", out, err)
	}
	if out, err := cms.Update(ctx, unconditional, metav1.UpdateOptions{}); err != nil || id(out) != "ns/a@3" {
		t.Fatalf("an update that changes nothing must keep RV 3: %v %v", id(out), err)
	}
	if _, err := cms.Update(ctx, cm("ns", "missing"), metav1.UpdateOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("update of a missing object: %v, want NotFound", err)
	}
}

func TestDeleteSemantics(t *testing.T) {
	srv, cms := newServer(t, cachetest.Options{})
	ctx := t.Context()
	create(t, cms, "ns/a", "ns/b")
	out, err := cms.Delete(ctx, "ns", "a", metav1.DeleteOptions{})
	if err != nil || id(out) != "ns/a@3" || srv.ResourceVersion() != "3" {
		t.Fatalf("delete returned %v %v, server at %s; want ns/a@3 at 3", id(out), err, srv.ResourceVersion())
	}
	if _, err := cms.Delete(ctx, "ns", "a", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("second delete: %v, want NotFound", err)
	}
	pre := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: ptr.To("1")}}
	if _, err := cms.Delete(ctx, "ns", "b", pre); !apierrors.IsConflict(err) {
		t.Fatalf("delete with a stale precondition: %v, want Conflict", err)
	}
	if _, err := cms.Get(ctx, "ns", "a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get after delete: %v", err)
	}
}

func TestDeleteCollectionAndCreateAll(t *testing.T) {
	_, cms := newServer(t, cachetest.Options{})
	ctx := t.Context()
	err := cms.CreateAll(ctx, cm("ns", "a", "app", "x"), cm("ns", "b", "app", "y"), cm("other", "c", "app", "x"))
	if err != nil {
		t.Fatal(err)
	}
	if err := cms.CreateAll(ctx, cm("ns", "d"), cm("ns", "a")); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("CreateAll with a duplicate: %v", err)
	}
	n, err := cms.Namespace("ns").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "app=x"})
	if err != nil || n != 1 {
		t.Fatalf("DeleteCollection: %d %v, want 1", n, err)
	}
	objs, rv := cms.Objects()
	var got []string
	for _, o := range objs {
		got = append(got, id(o))
	}
	if !equal(got, []string{"ns/b@2", "ns/d@4", "other/c@3"}) || rv != "5" {
		t.Fatalf("objects %v at %s", got, rv)
	}
}

func TestGetResourceVersions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, cms := newServer(t, cachetest.Options{CacheLag: 1})
		ctx := t.Context()
		create(t, cms, "ns/a")
		update(t, cms, "ns/a")
		if out, _ := cms.Get(ctx, "ns", "a", metav1.GetOptions{ResourceVersion: "0"}); id(out) != "ns/a@1" {
			t.Errorf("RV 0 reads the lagging cache: %v, want ns/a@1", id(out))
		}
		if out, _ := cms.Get(ctx, "ns", "a", metav1.GetOptions{}); id(out) != "ns/a@2" {
			t.Errorf("RV \"\" reads the newest: %v", id(out))
		}
		_, err := cms.Get(ctx, "ns", "a", metav1.GetOptions{ResourceVersion: "9"})
		if !apierrors.IsTimeout(err) || !apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
			t.Errorf("RV beyond the newest: %v, want too large", err)
		}
	})
}

func TestUnstructuredResource(t *testing.T) {
	srv := cachetest.NewServer(cachetest.Options{})
	defer srv.Close()
	proto := &unstructured.Unstructured{}
	proto.SetAPIVersion("example.com/v1")
	proto.SetKind("Widget")
	widgets := srv.Resource(cachetest.Type{Resource: "widgets", Object: proto})
	if gr := widgets.GroupResource(); gr.Group != "example.com" {
		t.Fatalf("group %q", gr.Group)
	}
	w := &unstructured.Unstructured{}
	w.SetNamespace("ns")
	w.SetName("w")
	if _, err := widgets.Create(t.Context(), w, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := widgets.List(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ul := list.(*unstructured.UnstructuredList)
	if ul.GetKind() != "WidgetList" || len(ul.Items) != 1 || ul.Items[0].GetKind() != "Widget" || ul.GetResourceVersion() != "1" {
		t.Fatalf("list %+v", ul)
	}
	other := &unstructured.Unstructured{}
	other.SetAPIVersion("v1")
	other.SetKind("Pod")
	other.SetName("p")
	other.SetNamespace("ns")
	if _, err := widgets.Create(t.Context(), other, metav1.CreateOptions{}); !apierrors.IsBadRequest(err) {
		t.Fatalf("wrong kind: %v, want BadRequest", err)
	}
}

func TestUnstructuredWatchEventsAndBookmarksCarryTheKind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := cachetest.NewServer(cachetest.Options{})
		defer srv.Close()
		proto := &unstructured.Unstructured{}
		proto.SetAPIVersion("example.com/v1")
		proto.SetKind("Widget")
		widgets := srv.Resource(cachetest.Type{Resource: "widgets", Object: proto})
		w := openWatch(t, widgets, metav1.ListOptions{AllowWatchBookmarks: true})
		obj := &unstructured.Unstructured{}
		obj.SetNamespace("ns")
		obj.SetName("w")
		if _, err := widgets.Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		added := (<-w.ResultChan()).Object.(*unstructured.Unstructured)
		time.Sleep(time.Minute)
		bookmark := (<-w.ResultChan()).Object.(*unstructured.Unstructured)
		for _, u := range []*unstructured.Unstructured{added, bookmark} {
			if u.GetAPIVersion() != "example.com/v1" || u.GetKind() != "Widget" || u.GetResourceVersion() != "1" {
				t.Fatalf("event object %v", u.Object)
			}
		}
	})
}

func TestResourceTypePanicsOnProgrammerErrors(t *testing.T) {
	srv := cachetest.NewServer(cachetest.Options{})
	defer srv.Close()
	srv.Resource(configMaps)
	for name, typ := range map[string]cachetest.Type{
		"no resource":     {Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}},
		"no list":         {Resource: "x", Object: &corev1.ConfigMap{}},
		"not a list":      {Resource: "x", Object: &corev1.ConfigMap{}, List: &corev1.ConfigMap{}},
		"no unstructured": {Resource: "x", Object: &unstructured.Unstructured{}},
		"other type":      {Resource: "configmaps", Object: &corev1.Pod{}, List: &corev1.PodList{}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			srv.Resource(typ)
		}()
	}
}
