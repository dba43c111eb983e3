package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// sim is a small in-memory stand-in for the API server, serving ConfigMaps
// with resourceVersions, a change history that can be compacted, and watches
// that faults can close. It implements the Reflector's ListerWatcher.
type sim struct {
	mu        sync.Mutex
	rv        uint64
	objs      map[string]*corev1.ConfigMap
	history   []watch.Event
	compacted uint64
	watchers  map[*simWatch]struct{}
	throttle  int
}

func newSim() *sim {
	return &sim{objs: map[string]*corev1.ConfigMap{}, watchers: map[*simWatch]struct{}{}}
}

type simWatch struct {
	ch   chan watch.Event
	once sync.Once
	stop chan struct{}
}

func (w *simWatch) ResultChan() <-chan watch.Event { return w.ch }
func (w *simWatch) Stop()                          { w.once.Do(func() { close(w.stop) }) }

// write applies a mutation and sends it to every watcher. A watcher that
// cannot keep up is dropped, as a real server does.
func (s *sim) write(t watch.EventType, name string, data string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv++
	o := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name, ResourceVersion: strconv.FormatUint(s.rv, 10)}, Data: map[string]string{"v": data}}
	if t == watch.Deleted {
		delete(s.objs, name)
	} else {
		s.objs[name] = o
	}
	e := watch.Event{Type: t, Object: o}
	s.history = append(s.history, e)
	for w := range s.watchers {
		select {
		case w.ch <- e:
		default:
			s.dropLocked(w)
		}
	}
}

func (s *sim) dropLocked(w *simWatch) {
	delete(s.watchers, w)
	close(w.ch)
}

// closeWatches ends every open watch, as a restarting server would.
func (s *sim) closeWatches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watchers {
		s.dropLocked(w)
	}
}

// compact forgets the history, so that resuming watches get 410 Expired.
func (s *sim) compact() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.compacted = s.rv
	s.history = nil
}

// throttleWatches makes the next n watch requests fail with 429 (faults
// injected while some are pending do not add up).
func (s *sim) throttleWatches(n int) {
	s.mu.Lock()
	s.throttle = max(s.throttle, n)
	s.mu.Unlock()
}

func (s *sim) List(opts metav1.ListOptions) (runtime.Object, error) {
	return s.ListWithContext(context.Background(), opts)
}

func (s *sim) ListWithContext(context.Context, metav1.ListOptions) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.FormatUint(s.rv, 10)}}
	for _, o := range s.objs {
		l.Items = append(l.Items, *o.DeepCopy())
	}
	return l, nil
}

func (s *sim) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return s.WatchWithContext(context.Background(), opts)
}

// IsWatchListSemanticsUnSupported: this stand-in has no WatchList streams.
func (s *sim) IsWatchListSemanticsUnSupported() bool { return true }

func (s *sim) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.throttle > 0 {
		s.throttle--
		return nil, apierrors.NewTooManyRequests("the demo server is throttling", 1)
	}
	from, err := strconv.ParseUint(opts.ResourceVersion, 10, 64)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("resourceVersion %q: the demo server needs a number", opts.ResourceVersion))
	}
	w := &simWatch{ch: make(chan watch.Event, 4096), stop: make(chan struct{})}
	if from < s.compacted {
		status := apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", from, s.compacted)).Status()
		w.ch <- watch.Event{Type: watch.Error, Object: &status}
		close(w.ch)
		return w, nil
	}
	for _, e := range s.history {
		if rv, _ := strconv.ParseUint(e.Object.(*corev1.ConfigMap).ResourceVersion, 10, 64); rv > from {
			w.ch <- e
		}
	}
	s.watchers[w] = struct{}{}
	go s.unregisterOnStop(ctx, w)
	return w, nil
}

// unregisterOnStop removes w once its consumer stops it or leaves.
func (s *sim) unregisterOnStop(ctx context.Context, w *simWatch) {
	select {
	case <-w.stop:
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.watchers[w]; ok {
		s.dropLocked(w)
	}
}

// snapshot returns "name@rv" for every object, sorted.
func (s *sim) snapshot() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.objs))
	for _, o := range s.objs {
		out = append(out, o.Name+"@"+o.ResourceVersion)
	}
	sort.Strings(out)
	return out
}
