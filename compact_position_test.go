package cache

import (
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	clientgocache "k8s.io/client-go/tools/cache"
)

// rvGauges is an InformerMetricsProvider that keeps the store
// resourceVersion gauge's last value.
type rvGauges struct {
	mu   sync.Mutex
	last float64
}

func (g *rvGauges) Set(v float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.last = v
}

func (g *rvGauges) value() float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.last
}

func (g *rvGauges) NewQueuedItemMetric(clientgocache.InformerNameAndResource) clientgocache.GaugeMetric {
	return nopGauge{}
}
func (g *rvGauges) NewProcessingLatencyMetric(clientgocache.InformerNameAndResource) clientgocache.HistogramMetric {
	return nopHistogram{}
}
func (g *rvGauges) NewStoreResourceVersionMetric(clientgocache.InformerNameAndResource) clientgocache.GaugeMetric {
	return g
}

type nopGauge struct{}

func (nopGauge) Set(float64) {}

type nopHistogram struct{}

func (nopHistogram) Observe(float64) {}

// A named informer's store keeps client-go's store resourceVersion gauge
// at the resourceVersion it reached (a LIST's, then a watch event's), a
// compact one as a decoded one.
func TestCompactStoreKeepsTheResourceVersionGauge(t *testing.T) {
	for _, compact := range []bool{false, true} {
		t.Run(fmt.Sprintf("compact=%v", compact), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				names, err := clientgocache.NewInformerName(fmt.Sprint("position-", compact))
				if err != nil {
					t.Fatal(err)
				}
				defer names.Release()
				gauge := &rvGauges{}
				lw := &scriptLW{noWL: true, lists: []listReply{{list: cmList("10", "", cm("a", "5"))}}}
				inf := NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{}, SharedIndexInformerOptions{
					Identifier:              names.WithResource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}),
					InformerMetricsProvider: gauge,
				})
				if compact {
					if err := inf.(ReflectorConfigurable).SetReflectorOptions(ReflectorOptions{Compact: &CompactOptions{}}); err != nil {
						t.Fatal(err)
					}
				}
				defer runInformer(t, inf)()
				synctest.Wait()
				if v := gauge.value(); v != 10 {
					t.Fatalf("after the LIST the gauge is %v, want 10", v)
				}
				(&informerDriver{t: t, lw: lw}).send(ev(watch.Modified, cm("a", "12")))
				if v := gauge.value(); v != 12 {
					t.Fatalf("after a watch event the gauge is %v, want 12", v)
				}
			})
		})
	}
}
