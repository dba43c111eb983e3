//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// maxDiffs is how many differences a failed comparison reports.
const maxDiffs = 10

// objectState is what the comparison looks at in one object: its
// resourceVersion and its data, printed canonically (maps print sorted).
type objectState struct{ rv, data string }

// objectSet is objects by namespace/name.
type objectSet map[string]objectState

// stateOf indexes objs (ConfigMaps or Secrets) by namespace/name.
func stateOf(objs []interface{}) (objectSet, error) {
	set := make(objectSet, len(objs))
	for _, o := range objs {
		m, err := meta.Accessor(o)
		if err != nil {
			return nil, fmt.Errorf("object %T without metadata: %w", o, err)
		}
		key := m.GetNamespace() + "/" + m.GetName()
		if _, dup := set[key]; dup {
			return nil, fmt.Errorf("%s appears twice", key)
		}
		var data string
		switch o := o.(type) {
		case *corev1.ConfigMap:
			data = fmt.Sprintf("data=%q binaryData=%q", o.Data, o.BinaryData)
		case *corev1.Secret:
			data = fmt.Sprintf("type=%s data=%q", o.Type, o.Data)
		default:
			return nil, fmt.Errorf("%s: cannot compare a %T", key, o)
		}
		set[key] = objectState{rv: m.GetResourceVersion(), data: data}
	}
	return set, nil
}

// diff lists, by name in order, how got differs from want: missing,
// unexpected, or with another resourceVersion or data.
func diff(want, got objectSet) []string {
	keys := make([]string, 0, len(want)+len(got))
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		w, inWant := want[k]
		g, inGot := got[k]
		switch {
		case !inGot:
			out = append(out, fmt.Sprintf("%s: missing (want rv %s)", k, w.rv))
		case !inWant:
			out = append(out, fmt.Sprintf("%s: unexpected (rv %s)", k, g.rv))
		case w.rv != g.rv:
			out = append(out, fmt.Sprintf("%s: rv %s, want %s", k, g.rv, w.rv))
		case w.data != g.data:
			out = append(out, fmt.Sprintf("%s: data %s, want %s", k, g.data, w.data))
		}
	}
	return out
}

// serverList LISTs resource ("configmaps" or "secrets") in ns at RV ""
// (a consistent read of the latest state) and returns its items.
func serverList(ctx context.Context, cs kubernetes.Interface, resource, ns string) ([]interface{}, error) {
	opts := metav1.ListOptions{ResourceVersion: ""}
	var out []interface{}
	switch resource {
	case "configmaps":
		l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing configmaps in %s: %w", ns, err)
		}
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case "secrets":
		l, err := cs.CoreV1().Secrets(ns).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing secrets in %s: %w", ns, err)
		}
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	default:
		return nil, fmt.Errorf("cannot list %q", resource)
	}
	return out, nil
}

// assertSame fails t unless got holds the same objects as want, object
// for object (namespace/name, resourceVersion, data), reporting the first
// differences by name.
func assertSame(t *testing.T, wantName string, want []interface{}, gotName string, got []interface{}) {
	t.Helper()
	w, err := stateOf(want)
	if err != nil {
		t.Fatalf("%s: %v", wantName, err)
	}
	g, err := stateOf(got)
	if err != nil {
		t.Fatalf("%s: %v", gotName, err)
	}
	d := diff(w, g)
	if len(d) == 0 {
		t.Logf("%s matches %s: %d objects", gotName, wantName, len(g))
		return
	}
	t.Errorf("%s (%d objects) differs from %s (%d objects) in %d objects; the first:\n  %s",
		gotName, len(g), wantName, len(w), len(d), strings.Join(d[:min(maxDiffs, len(d))], "\n  "))
}

// assertMatchesServer fails t unless store holds exactly what the server
// lists of resource in ns.
func assertMatchesServer(t *testing.T, cs kubernetes.Interface, resource, ns, storeName string, store []interface{}) {
	t.Helper()
	want, err := serverList(t.Context(), cs, resource, ns)
	if err != nil {
		t.Fatal(err)
	}
	assertSame(t, "the server", want, storeName, store)
}
