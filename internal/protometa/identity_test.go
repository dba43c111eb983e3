package protometa

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kreflector/cache/internal/podgen"
)

// agreesOnIdentity fails t if Identity reads data and the generated code
// decodes it to another namespace, name or resourceVersion.
func agreesOnIdentity(t *testing.T, data []byte) (ok bool) {
	t.Helper()
	ns, name, rv, ok := Identity(data)
	var p corev1.Pod
	if err := p.Unmarshal(data); err != nil || !ok {
		return ok
	}
	if string(ns) != p.Namespace || string(name) != p.Name || string(rv) != p.ResourceVersion {
		t.Fatalf("read %q/%q at %q; the generated code decodes %q/%q at %q", ns, name, rv, p.Namespace, p.Name, p.ResourceVersion)
	}
	return true
}

func TestIdentityOfPods(t *testing.T) {
	for i := range 20 {
		p := podgen.Pod(i, 1000+i)
		if !agreesOnIdentity(t, marshal(t, p)) {
			t.Fatalf("pod %d: not read", i)
		}
	}
}

func TestIdentityTakesTheLastOfMergedMetadata(t *testing.T) {
	first := &corev1.Pod{}
	first.Namespace, first.Name, first.ResourceVersion = "ns-a", "a", "1"
	// A second metadata with no namespace field: the first's stays.
	second := metaField1([]byte{nameField<<3 | wireBytes, 1, 'b', resourceVersionField<<3 | wireBytes, 1, '2'})
	data := append(marshal(t, first), second...)
	ns, name, rv, ok := Identity(data)
	if !ok || string(ns) != "ns-a" || string(name) != "b" || string(rv) != "2" {
		t.Fatalf("got %q/%q at %q (ok %v), want ns-a/b at 2", ns, name, rv, ok)
	}
	agreesOnIdentity(t, data)
}

func TestIdentityRefusesWhatTheGeneratedCodeRefuses(t *testing.T) {
	good := marshal(t, podgen.Pod(1, 1))
	cases := map[string][]byte{
		"truncated":          good[:len(good)-3],
		"metadata not bytes": {metaField<<3 | wireVarint, 1},
		"name not bytes":     metaField1([]byte{nameField<<3 | wireVarint, 7}),
		"rv not bytes":       metaField1([]byte{resourceVersionField<<3 | wireFixed32, 1, 2, 3, 4}),
		"metadata cut short": metaField1([]byte{namespaceField<<3 | wireBytes, 9, 'x'}),
	}
	for name, data := range cases {
		if _, _, _, ok := Identity(data); ok {
			t.Errorf("%s: read", name)
		}
		var p corev1.Pod
		if p.Unmarshal(data) == nil {
			t.Errorf("%s: the generated code takes it: the case proves nothing", name)
		}
	}
}

func FuzzIdentityAgainstGenerated(f *testing.F) {
	f.Add(marshal(f, podgen.Pod(3, 3)))
	f.Add(metaField1([]byte{nameField<<3 | wireBytes, 1, 'n', resourceVersionField<<3 | wireBytes, 1, '9'}))
	f.Fuzz(func(t *testing.T, data []byte) { agreesOnIdentity(t, data) })
}
