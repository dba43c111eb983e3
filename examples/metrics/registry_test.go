package main

import (
	"strings"
	"testing"

	"github.com/kreflector/cache"
)

func TestRegistryRendersPrometheusTextAndForgetsStoppedReflectors(t *testing.T) {
	g := newRegistry()
	run := g.NewReflectorMetrics(`cms "prod"`)
	run.Counter(cache.MetricLists, string(cache.ListInitial)).Add(1)
	run.Counter(cache.MetricLists, string(cache.ListInitial)).Add(2)
	run.Gauge(cache.MetricLastResourceVersion).Set(42)
	other := g.NewReflectorMetrics("pods")
	other.Gauge(cache.MetricLastResourceVersion).Set(7)

	var b strings.Builder
	if err := g.writePrometheus(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# TYPE reflector_lists_total counter\n",
		`reflector_lists_total{reflector="cms \"prod\"",cause="initial"} 3` + "\n",
		"# TYPE reflector_last_resource_version gauge\n",
		`reflector_last_resource_version{reflector="cms \"prod\""} 42` + "\n" + `reflector_last_resource_version{reflector="pods"} 7` + "\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in:\n%s", want, b.String())
		}
	}

	run.Delete()
	b.Reset()
	_ = g.writePrometheus(&b)
	if strings.Contains(b.String(), "prod") || !strings.Contains(b.String(), `reflector="pods"`) {
		t.Fatalf("after Delete:\n%s", b.String())
	}
	if v := g.expvarValue().(map[string]map[string]float64); len(v) != 1 || v["pods"][cache.MetricLastResourceVersion] != 7 {
		t.Fatalf("expvar value %v", v)
	}
}
