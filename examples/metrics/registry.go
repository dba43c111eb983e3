package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kreflector/cache"
)

// registry is a cache.ReflectorMetricsProvider that keeps every series in memory and
// renders them in Prometheus' text format and as an expvar value. It is the
// whole adapter a program needs; nothing in it depends on a metrics library.
type registry struct {
	mu     sync.Mutex
	series map[seriesKey]*value
}

type seriesKey struct {
	metric, reflector, labelValue string
}

func newRegistry() *registry { return &registry{series: map[seriesKey]*value{}} }

// value is a float64 that any goroutine may add to, set, or read.
type value struct{ bits atomic.Uint64 }

func (v *value) Add(d float64) {
	for {
		old := v.bits.Load()
		if v.bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+d)) {
			return
		}
	}
}

func (v *value) Set(f float64) { v.bits.Store(math.Float64bits(f)) }
func (v *value) get() float64  { return math.Float64frombits(v.bits.Load()) }

// NewReflectorMetrics implements cache.ReflectorMetricsProvider.
func (g *registry) NewReflectorMetrics(reflector string) cache.ReflectorMetrics {
	return reflectorRun{g: g, name: reflector}
}

type reflectorRun struct {
	g    *registry
	name string
}

func (r reflectorRun) Counter(metric, labelValue string) cache.CounterAdder {
	return r.g.add(seriesKey{metric, r.name, labelValue})
}

func (r reflectorRun) Gauge(metric string) cache.GaugeMetric {
	return r.g.add(seriesKey{metric, r.name, ""})
}

// Delete drops every series of the reflector: its Run has returned.
func (r reflectorRun) Delete() {
	r.g.mu.Lock()
	defer r.g.mu.Unlock()
	for k := range r.g.series {
		if k.reflector == r.name {
			delete(r.g.series, k)
		}
	}
}

// add returns the series k, creating it at zero if it is new.
func (g *registry) add(k seriesKey) *value {
	g.mu.Lock()
	defer g.mu.Unlock()
	v, ok := g.series[k]
	if !ok {
		v = &value{}
		g.series[k] = v
	}
	return v
}

// writePrometheus renders every series in Prometheus' text exposition
// format, metric by metric in the order of cache.MetricDescs.
func (g *registry) writePrometheus(w io.Writer) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, d := range cache.MetricDescs {
		keys := g.keysOf(d.Name)
		if len(keys) == 0 {
			continue
		}
		kind := map[cache.MetricKind]string{cache.Counter: "counter", cache.Gauge: "gauge"}[d.Kind]
		if _, err := fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", d.Name, d.Help, d.Name, kind); err != nil {
			return err
		}
		for _, k := range keys {
			labels := fmt.Sprintf(`reflector="%s"`, escapeLabel(k.reflector))
			if d.Label != "" {
				labels += fmt.Sprintf(`,%s="%s"`, d.Label, escapeLabel(k.labelValue))
			}
			if _, err := fmt.Fprintf(w, "%s{%s} %g\n", d.Name, labels, g.series[k].get()); err != nil {
				return err
			}
		}
	}
	return nil
}

// keysOf returns the series of metric, sorted. g.mu must be held.
func (g *registry) keysOf(metric string) []seriesKey {
	var keys []seriesKey
	for k := range g.series {
		if k.metric == metric {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b seriesKey) int {
		return strings.Compare(a.reflector+"\x00"+a.labelValue, b.reflector+"\x00"+b.labelValue)
	})
	return keys
}

func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// expvarValue is the registry as a JSON-able value for expvar: reflector
// name → "metric" or "metric{label}" → value.
func (g *registry) expvarValue() any {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string]map[string]float64{}
	for k, v := range g.series {
		if out[k.reflector] == nil {
			out[k.reflector] = map[string]float64{}
		}
		name := k.metric
		if k.labelValue != "" {
			name += "{" + k.labelValue + "}"
		}
		out[k.reflector][name] = v.get()
	}
	return out
}
