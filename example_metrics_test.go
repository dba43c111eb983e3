package cache_test

import (
	"context"
	"expvar"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache"
)

// expvarMetrics shows every Reflector under one expvar.Map, one entry per
// reflector name, each holding its series as expvar.Floats.
type expvarMetrics struct{ root *expvar.Map }

type expvarRun struct {
	root   *expvar.Map
	name   string
	series *expvar.Map
}

func (p expvarMetrics) NewReflectorMetrics(name string) cache.ReflectorMetrics {
	series := new(expvar.Map)
	p.root.Set(name, series)
	return expvarRun{root: p.root, name: name, series: series}
}

func (r expvarRun) Counter(metric, label string) cache.CounterAdder {
	if label != "" {
		metric += "{" + label + "}"
	}
	f := new(expvar.Float)
	r.series.Set(metric, f)
	return f
}

func (r expvarRun) Gauge(metric string) cache.GaugeMetric {
	f := new(expvar.Float)
	r.series.Set(metric, f)
	return f
}

func (r expvarRun) Delete() { r.root.Delete(r.name) }

// A ReflectorMetricsProvider adapter for expvar: the reflector's series appear while
// it runs and are gone once Run returns. In a program, publish the root
// with expvar.Publish("reflectors", root) to serve it on /debug/vars.
func ExampleMetricsProvider() {
	root := new(expvar.Map)
	lw := &cache.ListWatch{
		ListFunc: func(metav1.ListOptions) (kruntime.Object, error) {
			return &corev1.ConfigMapList{
				ListMeta: metav1.ListMeta{ResourceVersion: "7"},
				Items:    []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a", ResourceVersion: "7"}}},
			}, nil
		},
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
	}
	r := cache.NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cache.NewStore(cache.MetaNamespaceKeyFunc), cache.ReflectorOptions{
		Name:         "configmaps",
		UseWatchList: ptr.To(false),
		Metrics:      expvarMetrics{root: root},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.RunWithContext(ctx); close(done) }()
	if err := r.WaitForSync(ctx); err != nil {
		fmt.Println(err)
	}
	series := root.Get("configmaps").(*expvar.Map)
	fmt.Println("initial lists:", series.Get("reflector_lists_total{initial}"))
	fmt.Println("items listed:", series.Get("reflector_list_items_total"))
	fmt.Println("last resourceVersion:", series.Get("reflector_last_resource_version"))
	cancel()
	<-done
	fmt.Println("after Run:", root.Get("configmaps"))
	// Output:
	// initial lists: 1
	// items listed: 1
	// last resourceVersion: 7
	// after Run: <nil>
}
