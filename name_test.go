package cache

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgocache "k8s.io/client-go/tools/cache"
)

// seriesRecorder is a ReflectorMetricsProvider (and HandlerMetricsProvider)
// that keeps the names of the series open: "reflector <name>" and
// "handler <informer>/<handler>".
type seriesRecorder struct {
	mu   sync.Mutex
	open []string
}

func (r *seriesRecorder) opened(name string) func() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.open = append(r.open, name)
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if i := slices.Index(r.open, name); i >= 0 {
			r.open = slices.Delete(r.open, i, i+1)
		}
	}
}

func (r *seriesRecorder) NewReflectorMetrics(name string) ReflectorMetrics {
	return deletingReflectorMetrics{deleting{r.opened("reflector " + name)}}
}

func (r *seriesRecorder) NewHandlerMetrics(informer, handler string) HandlerMetrics {
	return deletingHandlerMetrics{deleting{r.opened("handler " + informer + "/" + handler)}}
}

func (r *seriesRecorder) series() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(slices.Values(r.open))
}

// deleting wants no gauge and runs del when deleted; the metrics below
// want no counter either.
type deleting struct{ del func() }

func (deleting) Gauge(string) GaugeMetric { return nil }
func (m deleting) Delete()                { m.del() }

type deletingReflectorMetrics struct{ deleting }

func (deletingReflectorMetrics) Counter(string, string) CounterAdder { return nil }

type deletingHandlerMetrics struct{ deleting }

func (deletingHandlerMetrics) Counter(string) CounterAdder { return nil }

// Two informers of one type, sharing one metrics provider and started
// the way controllers start them (go inf.Run(...)), each have their own
// series: their Reflectors are named after the informers, not after the
// goroutine's entry (which made every informer's Reflector
// "runtime/asm_amd64.s:..."), the second of one type with "#2", and its
// handlers are labelled with the same name. Stopping one deletes its
// series only.
func TestInformersSharingAMetricsProviderKeepTheirOwnSeries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &seriesRecorder{}
		var stops []func()
		for range 2 {
			_, inf := abcInformer()
			if err := inf.(ReflectorConfigurable).SetReflectorOptions(ReflectorOptions{Metrics: rec}); err != nil {
				t.Fatal(err)
			}
			if _, err := inf.AddEventHandler(&blockingHandler{wait: func() {}}); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			go inf.Run(stop)
			synctest.Wait()
			// Once every goroutine of the bubble is blocked again, Run has
			// returned.
			stops = append(stops, func() { close(stop); synctest.Wait() })
		}
		const first, second = "SharedIndexInformer *v1.ConfigMap", "SharedIndexInformer *v1.ConfigMap #2"
		const handler = "/github.com/kreflector/cache.blockingHandler"
		want := []string{"handler " + first + handler, "handler " + second + handler, "reflector " + first, "reflector " + second}
		slices.Sort(want)
		if got := rec.series(); !slices.Equal(got, want) {
			t.Errorf("series %q, want %q", got, want)
		}
		stops[0]()
		want = []string{"handler " + second + handler, "reflector " + second}
		if got := rec.series(); !slices.Equal(got, want) {
			t.Errorf("after the first informer stopped: series %q, want %q", got, want)
		}
		stops[1]()
		if got := rec.series(); len(got) != 0 {
			t.Errorf("after both stopped: series %q", got)
		}
	})
}

// An informer's Reflector takes the name given with SetReflectorOptions
// as it is, even when another running informer has it; without one, an
// Identifier names it.
func TestInformerReflectorNameFromItsOptions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		names, err := clientgocache.NewInformerName("test-informers")
		if err != nil {
			t.Fatal(err)
		}
		defer names.Release()
		id := names.WithResource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"})
		rec := &seriesRecorder{}
		var stops []func()
		start := func(inf SharedIndexInformer, o ReflectorOptions) {
			o.Metrics = rec
			if err := inf.(ReflectorConfigurable).SetReflectorOptions(o); err != nil {
				t.Fatal(err)
			}
			stops = append(stops, runInformer(t, inf))
		}
		_, a := abcInformer()
		_, b := abcInformer()
		start(a, ReflectorOptions{Name: "configmaps"})
		start(b, ReflectorOptions{Name: "configmaps"})
		lw := &scriptLW{noWL: true, lists: []listReply{{list: cmList("10", "")}}}
		start(NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{}, SharedIndexInformerOptions{Identifier: id}), ReflectorOptions{})
		synctest.Wait()
		got := strings.Join(rec.series(), ", ")
		for _, s := range stops {
			s()
		}
		if want := "reflector configmaps, reflector configmaps, reflector test-informers deployments.apps"; got != want {
			t.Errorf("series %s, want %s", got, want)
		}
	})
}

// A controller's Reflector (the NewInformer family, or New) is named after
// the line that built the controller, even when Run is the entry of its
// goroutine: runtime frames are skipped.
func TestControllerReflectorNamedAfterItsConstructor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &scriptLW{noWL: true, lists: []listReply{{list: cmList("10", "")}}}
		_, ctrl := NewInformer(lw, &corev1.ConfigMap{}, 0, ResourceEventHandlerFuncs{})
		stop := make(chan struct{})
		go ctrl.Run(stop)
		synctest.Wait()
		name := ctrl.(*controller).runningReflector().Name()
		close(stop)
		synctest.Wait()
		if !strings.Contains(name, "name_test.go:") {
			t.Errorf("Reflector name %q, want the file:line of NewInformer's call", name)
		}
	})
}

// Objects whose Go type serves any kind add their kind to the informer's
// default name, so that informers of two kinds do not share it.
func TestInformerNameOfObjectsOfAnyKind(t *testing.T) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	m := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}}
	for obj, want := range map[any]string{
		u:                            "SharedIndexInformer *unstructured.Unstructured apps/v1, Kind=Deployment",
		m:                            "SharedIndexInformer *v1.PartialObjectMetadata /v1, Kind=Secret",
		&unstructured.Unstructured{}: "SharedIndexInformer *unstructured.Unstructured",
		&corev1.ConfigMap{}:          "SharedIndexInformer *v1.ConfigMap",
	} {
		if got := informerName(obj, clientgocache.InformerNameAndResource{}); got != want {
			t.Errorf("informerName(%T) = %q, want %q", obj, got, want)
		}
	}
}
