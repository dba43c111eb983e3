//go:build e2e

package e2e

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The request of a quiet check (ReflectorOptions.QuietCheckAfter), a LIST
// of at most one object at the latest resourceVersion (""), costs the same
// whatever the number of objects: kube-apiserver 1.37 answers it with one
// item, in a namespace of 1 ConfigMap and of 3,000, and across all
// namespaces. Logged beside it: the same at RV "0", where 1.37's watch
// cache ignores the limit and sends everything (which is why the check
// does not use it), and a label selector that matches nothing.
func TestQuietCheckRequestIsConstant(t *testing.T) {
	t.Parallel()
	cs := client(t, testCluster.admin)
	small := namespace(t, cs)
	mustCreateConfigMaps(t, cs, small, 1)
	big := bulkNamespace(t, cs)
	for _, c := range []struct {
		name, ns, rv, selector string
		check                  bool
	}{
		{"1 object, RV \"\"", small, "", "", true},
		{"3,000 objects, RV \"\"", big, "", "", true},
		{"all namespaces, RV \"\"", "", "", "", true},
		{"1 object, RV 0", small, "0", "", false},
		{"3,000 objects, RV 0", big, "0", "", false},
		{"1 object, RV 0, selector matching nothing", small, "0", "none=x", false},
		{"3,000 objects, RV 0, selector matching nothing", big, "0", "none=x", false},
	} {
		bytes, items, median := listOneCost(t, c.ns, c.rv, c.selector)
		t.Logf("%-48s %5d bytes, %d item(s), median %v of 50", c.name, bytes, items, median)
		if c.check && (items != 1 || bytes > 2000) {
			t.Errorf("%s: %d items in %d bytes, want the one the limit asks for", c.name, items, bytes)
		}
	}
}

// listOneCost LISTs ConfigMaps (in ns; all if empty) with limit 1 at rv
// 50 times and returns the size and item count of the answer and the
// median latency.
func listOneCost(t *testing.T, ns, rv, selector string) (int, int, time.Duration) {
	rc := client(t, testCluster.admin).CoreV1().RESTClient()
	var lat []time.Duration
	var body []byte
	for range 50 {
		req := rc.Get().Resource("configmaps").Param("limit", "1").Param("resourceVersion", rv)
		if ns != "" {
			req = req.Namespace(ns)
		}
		if selector != "" {
			req = req.Param("labelSelector", selector)
		}
		start := time.Now()
		b, err := req.DoRaw(t.Context())
		lat = append(lat, time.Since(start))
		if err != nil {
			t.Fatal(err)
		}
		body = b
	}
	var l struct {
		Items []json.RawMessage `json:"items"`
		metav1.ListMeta
	}
	if err := json.Unmarshal(body, &l); err != nil {
		t.Fatal(err)
	}
	slices.Sort(lat)
	return len(body), len(l.Items), lat[len(lat)/2]
}
