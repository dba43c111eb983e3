package cachetest_test

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kreflector/cache/cachetest"
)

// widget is an empty Unstructured example.com/v1 Widget.
func widget() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
	return u
}

// unknown is a typed object client-go's scheme does not know.
type unknown struct {
	metav1.TypeMeta
	metav1.ObjectMeta
}

func (u *unknown) DeepCopyObject() runtime.Object {
	c := *u
	u.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

type unknownList struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []unknown
}

func (l *unknownList) DeepCopyObject() runtime.Object {
	c := *l
	c.Items = make([]unknown, len(l.Items))
	for i := range l.Items {
		c.Items[i] = *l.Items[i].DeepCopyObject().(*unknown)
	}
	return &c
}

// startMixed starts a server with ConfigMaps, Deployments, cluster-scoped
// Unstructured Widgets and a typed resource client-go's scheme lacks.
func startMixed(t *testing.T) (*cachetest.Server, *cachetest.Resource, kubernetes.Interface) {
	srv, _, cs := startHTTP(t, cachetest.Options{})
	deps := srv.Resource(cachetest.Type{Group: "apps", Resource: "deployments", Object: &appsv1.Deployment{}, List: &appsv1.DeploymentList{}})
	srv.Resource(cachetest.Type{Resource: "widgets", Object: widget(), ClusterScoped: true})
	srv.Resource(cachetest.Type{Group: "example.com", Resource: "unknowns", Object: &unknown{}, List: &unknownList{}})
	return srv, deps, cs
}

// Discovery lists every servable resource under the group and version it
// is served in, so that discovering clients work.
func TestHTTPDiscovery(t *testing.T) {
	_, _, cs := startMixed(t)
	groups, resources, err := cs.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range groups {
		got = append(got, g.Name+"/"+g.PreferredVersion.Version)
	}
	for _, l := range resources {
		for _, r := range l.APIResources {
			got = append(got, fmt.Sprintf("%s %s %s namespaced=%v", l.GroupVersion, r.Name, r.Kind, r.Namespaced))
		}
	}
	want := []string{"/v1", "apps/v1", "example.com/v1",
		"v1 configmaps ConfigMap namespaced=true",
		"apps/v1 deployments Deployment namespaced=true",
		"example.com/v1 widgets Widget namespaced=false"}
	if !equal(got, want) {
		t.Fatalf("discovery:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Resources are served under the group and version client-go's scheme
// gives their type (and stored without apiVersion and kind, as in
// process), Unstructured ones under their apiVersion; a path the server
// does not serve is 404, saying why for a type the scheme lacks.
func TestHTTPRoutes(t *testing.T) {
	srv, deps, cs := startMixed(t)
	ctx := bounded(t)
	if _, err := cs.AppsV1().Deployments("ns").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if objs, _ := deps.Objects(); len(objs) != 1 || !objs[0].GetObjectKind().GroupVersionKind().Empty() {
		t.Fatalf("stored deployments %v", objs)
	}
	dyn := dynamic.NewForConfigOrDie(srv.RESTConfig())
	wgvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	w := widget()
	w.SetName("w")
	if _, err := dyn.Resource(wgvr).Create(ctx, w, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := dyn.Resource(wgvr).List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.GetKind() != "WidgetList" || list.Items[0].GetAPIVersion() != "example.com/v1" {
		t.Fatalf("widgets: %+v, %v", list, err)
	}
	for _, path := range []string{"/apis/example.com/v1/unknowns", "/api/v2/configmaps", "/api/v1/configmaps/a",
		"/api/v1/namespaces/ns/configmaps/a/status", "/apis/example.com/v1/namespaces/ns/widgets"} {
		if err := cs.CoreV1().RESTClient().Get().AbsPath(path).Do(ctx).Error(); !apierrors.IsNotFound(err) {
			t.Errorf("GET %s: %v, want 404", path, err)
		}
	}
	err = cs.CoreV1().RESTClient().Get().AbsPath("/apis/example.com/v1/unknowns").Do(ctx).Error()
	if !strings.Contains(err.Error(), "not registered in client-go's scheme") {
		t.Errorf("the 404 for a typed resource client-go's scheme lacks does not say why: %v", err)
	}
}
