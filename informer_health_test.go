package cache

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
)

func TestInformerHealthNamesSlowAndStuckHandlers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw, inf := abcInformer()
		rep := inf.(InformerHealthReporter)
		if err := rep.SetHandlerLimits(HandlerLimits{MaxBacklog: 2, MaxCallDuration: 10 * time.Second}); err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		var firstOnly sync.Once
		inf.AddEventHandler(ResourceEventHandlerFuncs{AddFunc: func(interface{}) {}})
		slow, _ := inf.AddEventHandler(&blockingHandler{wait: func() { firstOnly.Do(func() { <-release }) }})
		if h := rep.Health(); h.Healthy || h.Reflector.State != Syncing {
			t.Errorf("health before Run: %+v", h)
		}
		stop := runInformer(t, inf)
		defer stop()
		synctest.Wait()
		if h := rep.Health(); !h.Healthy {
			t.Errorf("health with a call under its limit: %+v", h)
		}
		(&informerDriver{t: t, lw: lw}).send(ev(watch.Added, cm("d", "11")))
		h := rep.Health()
		name := slow.(*listener).name
		if len(h.Handlers) != 1 || h.Handlers[0].Name != name || h.Handlers[0].Reason != HandlerBacklog || h.Handlers[0].Backlog != 3 {
			t.Errorf("health with a backlog of 3: %+v", h)
		}
		time.Sleep(10 * time.Second)
		if h := rep.Health(); len(h.Handlers) != 1 || h.Handlers[0].Reason != HandlerStuck || h.Handlers[0].BusyFor < 10*time.Second || h.Healthy {
			t.Errorf("health with a stuck call: %+v", h)
		}
		close(release)
		synctest.Wait()
		if h := rep.Health(); !h.Healthy {
			t.Errorf("health after release: %+v", h)
		}
		st := rep.Stats()
		if len(st.Handlers) != 2 || st.Reflector.LastResourceVersion != "11" {
			t.Fatalf("stats: %+v", st)
		}
		s := st.Handlers[1]
		if s.Delivered != 4 || s.Backlog != 0 || s.MaxBacklog != 3 || s.SlowestCall < 13*time.Second || s.ProcessingTime < s.SlowestCall || !s.Synced {
			t.Errorf("slow handler's stats: %+v", s)
		}
		if err := rep.SetHandlerLimits(HandlerLimits{}); err == nil {
			t.Error("SetHandlerLimits after Run succeeded")
		}
	})
}

// blockingHandler calls wait in every OnAdd.
type blockingHandler struct{ wait func() }

func (b *blockingHandler) OnAdd(interface{}, bool)           { b.wait() }
func (b *blockingHandler) OnUpdate(interface{}, interface{}) {}
func (b *blockingHandler) OnDelete(interface{})              {}

func TestInformerTakesReflectorOptions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &scriptLW{lists: []listReply{{list: cmList("10", "", cm("a", "5"))}}} // offers WatchList
		inf := NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, nil)
		var mu sync.Mutex
		var states []string
		off := false
		err := inf.(ReflectorConfigurable).SetReflectorOptions(ReflectorOptions{
			UseWatchList: &off,
			OnHealthChange: func(h Health) {
				mu.Lock()
				defer mu.Unlock()
				states = append(states, h.State.String())
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		stop := runInformer(t, inf)
		defer stop()
		synctest.Wait()
		if err := inf.(ReflectorConfigurable).SetReflectorOptions(ReflectorOptions{}); err == nil {
			t.Error("SetReflectorOptions after Run succeeded")
		}
		mu.Lock()
		defer mu.Unlock()
		if !inf.HasSynced() || strings.Join(states, ",") != "Synced" {
			t.Errorf("synced %v, health changes %v; want a LIST-based sync reported once", inf.HasSynced(), states)
		}
		if st := inf.(InformerHealthReporter).Stats().Reflector; st.Lists[ListInitial] != 1 {
			t.Errorf("initial LISTs: %d, want 1 (WatchList turned off)", st.Lists[ListInitial])
		}
	})
}

// handlerMetricsRecorder is a ReflectorMetricsProvider that records handler metrics.
type handlerMetricsRecorder struct {
	mu     sync.Mutex
	values map[string]float64 // "informer/handler/metric"
	open   map[string]bool    // "informer/handler"
}

func (r *handlerMetricsRecorder) NewReflectorMetrics(string) ReflectorMetrics {
	return nopReflectorMetrics{}
}

func (r *handlerMetricsRecorder) NewHandlerMetrics(informer, handler string) HandlerMetrics {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.open[informer+"/"+handler] = true
	return &recordedHandler{r: r, prefix: informer + "/" + handler}
}

func (r *handlerMetricsRecorder) get(key string) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.values[key]
}

type recordedHandler struct {
	r      *handlerMetricsRecorder
	prefix string
}

type recordedMetric struct {
	r   *handlerMetricsRecorder
	key string
}

func (m recordedMetric) Add(d float64) { m.r.mu.Lock(); m.r.values[m.key] += d; m.r.mu.Unlock() }
func (m recordedMetric) Set(v float64) { m.r.mu.Lock(); m.r.values[m.key] = v; m.r.mu.Unlock() }

func (h *recordedHandler) Counter(metric string) CounterAdder {
	return recordedMetric{h.r, h.prefix + "/" + metric}
}
func (h *recordedHandler) Gauge(metric string) GaugeMetric {
	return recordedMetric{h.r, h.prefix + "/" + metric}
}
func (h *recordedHandler) Delete() { h.r.mu.Lock(); delete(h.r.open, h.prefix); h.r.mu.Unlock() }

type nopReflectorMetrics struct{}

func (nopReflectorMetrics) Counter(string, string) CounterAdder { return nil }
func (nopReflectorMetrics) Gauge(string) GaugeMetric            { return nil }
func (nopReflectorMetrics) Delete()                             {}

func TestInformerHandlerMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw, inf := abcInformer()
		rec := &handlerMetricsRecorder{values: map[string]float64{}, open: map[string]bool{}}
		if err := inf.(ReflectorConfigurable).SetReflectorOptions(ReflectorOptions{Name: "cms", Metrics: rec}); err != nil {
			t.Fatal(err)
		}
		reg, _ := inf.AddEventHandler(&blockingHandler{wait: func() { time.Sleep(time.Second) }})
		name := "cms/" + reg.(*listener).name
		stop := runInformer(t, inf)
		synctest.Wait()
		d := &informerDriver{t: t, lw: lw}
		d.send(ev(watch.Added, cm("d", "11")))
		d.sleep(2 * time.Second) // four calls of a second each
		if got := rec.get(name + "/" + MetricHandlerCalls); got != 4 {
			t.Errorf("calls = %v, want 4", got)
		}
		if got := rec.get(name + "/" + MetricHandlerProcessingSeconds); got != 4 {
			t.Errorf("processing seconds = %v, want 4", got)
		}
		stop()
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if len(rec.open) != 0 {
			t.Errorf("handler metrics left after stop: %v", rec.open)
		}
	})
}

// waitInBackground calls wait in a goroutine of its own; the channel gets
// its error once it returns.
func waitInBackground(wait func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- wait() }()
	return ch
}

// returned is the error wait's goroutine sent, and whether it has.
func returned(ch <-chan error) (error, bool) {
	select {
	case err := <-ch:
		return err, true
	default:
		return nil, false
	}
}

// An informer that stops before it syncs says so: its WaitForSync and its
// registrations', waiting or called after the stop, return at once with
// ErrStopped and the last list error, however long their context lasts,
// and its Health says Stopped, never synced, with that error.
func TestStoppedInformerSaysSo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		forbidden := apierrors.NewForbidden(cmGVR, "", errors.New("no list rights"))
		lists := make([]listReply, 30)
		for i := range lists {
			lists[i] = listReply{err: forbidden}
		}
		lw := newScript(lists, nil)
		lw.noWL = true
		inf := NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, Indexers{})
		rep := inf.(InformerHealthReporter)
		reg, err := inf.AddEventHandler(ResourceEventHandlerFuncs{})
		if err != nil {
			t.Fatal(err)
		}
		regWait := reg.(HandlerRegistration).WaitForSync
		waiting := waitInBackground(func() error { return rep.WaitForSync(t.Context()) })
		regWaiting := waitInBackground(func() error { return regWait(t.Context()) })
		stop := runInformer(t, inf)
		time.Sleep(20 * time.Second)
		synctest.Wait()
		if _, ok := returned(waiting); ok {
			t.Fatal("WaitForSync returned while the informer runs, unsynced")
		}
		if h := rep.Health(); h.Reflector.State != Degraded || h.Reflector.Reason != ReasonForbidden {
			t.Fatalf("health while running: %v", h.Reflector)
		}
		stop()
		stoppedAt := time.Now()
		synctest.Wait()
		wantStopped := func(what string, err error, ok bool) {
			t.Helper()
			switch {
			case !ok:
				t.Fatalf("%s still waits after the informer stopped", what)
			case !errors.Is(err, ErrNotSynced) || !errors.Is(err, ErrStopped) || !apierrors.IsForbidden(err):
				t.Fatalf("%s = %v; want ErrNotSynced, ErrStopped and the LIST's Forbidden", what, err)
			case !strings.Contains(err.Error(), "(stopped): last error: configmaps is forbidden"):
				t.Fatalf("%s = %q; want it to say it stopped, and why it had not synced", what, err)
			}
		}
		err, ok := returned(waiting)
		wantStopped("the informer's WaitForSync, waiting", err, ok)
		err, ok = returned(regWaiting)
		wantStopped("the registration's WaitForSync, waiting", err, ok)
		for what, wait := range map[string]func(context.Context) error{"the informer's WaitForSync": rep.WaitForSync, "the registration's WaitForSync": regWait} {
			ch := waitInBackground(func() error { return wait(t.Context()) })
			synctest.Wait()
			err, ok := returned(ch)
			wantStopped(what+", called after the stop", err, ok)
		}
		if !time.Now().Equal(stoppedAt) {
			t.Fatalf("the waits took %v", time.Since(stoppedAt))
		}
		h := rep.Health()
		if r := h.Reflector; r.State != Stopped || r.Reason != ReasonNone || r.HasSynced || !apierrors.IsForbidden(r.LastError) || !r.Since.Equal(stoppedAt) || h.Healthy {
			t.Fatalf("health after the stop: %+v", h)
		}
		if s := h.Reflector.String(); !strings.HasPrefix(s, "Stopped since ") || !strings.Contains(s, ", never synced: last error: configmaps is forbidden") {
			t.Fatalf("health after the stop reads %q", s)
		}
	})
}

// A registration whose handler is still taking its initial adds when the
// informer stops never syncs (its backlog is dropped): its WaitForSync
// returns then, though the informer had synced and the handler's call in
// progress holds up the informer's Run.
func TestRegistrationWaitForSyncReturnsWhenTheInformerStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, inf := abcInformer()
		block := make(chan struct{})
		release := sync.OnceFunc(func() { close(block) })
		defer release() // also when the test fails, so that Run can return
		var firstOnly sync.Once
		reg, err := inf.AddEventHandler(&blockingHandler{wait: func() { firstOnly.Do(func() { <-block }) }})
		if err != nil {
			t.Fatal(err)
		}
		waiting := waitInBackground(func() error { return reg.(HandlerRegistration).WaitForSync(t.Context()) })
		stop := runInformer(t, inf)
		synctest.Wait()
		if !inf.HasSynced() || reg.HasSynced() {
			t.Fatalf("the informer has synced: %v, the handler: %v; want true and false", inf.HasSynced(), reg.HasSynced())
		}
		stopped := make(chan struct{})
		go func() { stop(); close(stopped) }()
		synctest.Wait() // Run waits for the handler's call
		err, ok := returned(waiting)
		if !ok || !errors.Is(err, ErrNotSynced) || !errors.Is(err, ErrStopped) {
			t.Fatalf("the registration's WaitForSync returned %v (%v) once the informer stopped; want ErrStopped", ok, err)
		}
		if !strings.Contains(err.Error(), "+ event handler ") {
			t.Fatalf("WaitForSync = %q; want it to name the handler", err)
		}
		release()
		<-stopped
	})
}
