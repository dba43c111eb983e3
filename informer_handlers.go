package cache

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/klog/v2"
)

// errNilHandler is returned when a nil handler is added.
var errNilHandler = errors.New("cache: a nil ResourceEventHandler cannot be added to an informer")

// AddEventHandler adds handler with the informer's default resync period.
func (s *sharedIndexInformer) AddEventHandler(handler ResourceEventHandler) (ResourceEventHandlerRegistration, error) {
	return s.AddEventHandlerWithOptions(handler, HandlerOptions{})
}

// AddEventHandlerWithResyncPeriod adds handler with its own resync period
// (0: no resyncs).
func (s *sharedIndexInformer) AddEventHandlerWithResyncPeriod(handler ResourceEventHandler, resyncPeriod time.Duration) (ResourceEventHandlerRegistration, error) {
	return s.AddEventHandlerWithOptions(handler, HandlerOptions{ResyncPeriod: &resyncPeriod})
}

// AddEventHandlerWithOptions adds handler, which from then on is called,
// one call at a time, for every change, from its own goroutine and
// backlog. A handler added after Run first gets every stored object as
// OnAdd(obj, true). Resync periods below a second become a second; below
// the informer's resync check period they lower it before Run and are
// raised to it after. It fails for a nil handler and once the informer
// has stopped. The registration also has WaitForSync(ctx) error.
func (s *sharedIndexInformer) AddEventHandlerWithOptions(handler ResourceEventHandler, options HandlerOptions) (ResourceEventHandlerRegistration, error) {
	if handler == nil {
		return nil, errNilHandler
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil, fmt.Errorf("handler %v was not added to shared informer because it has stopped already", handler)
	}
	logger := klog.Background()
	if options.Logger != nil {
		logger = *options.Logger
	}
	requested := s.options.ResyncPeriod
	if options.ResyncPeriod != nil {
		requested = *options.ResyncPeriod
	}
	requested = s.adjustResyncPeriod(logger, requested)
	l := newListener(logger, handler, requested, effectiveResyncPeriod(logger, requested, s.resyncCheckPeriod), time.Now(), &s.sync)
	if !s.started {
		s.processor.add(l)
		return l, nil
	}
	s.blockDeltas.Lock()
	defer s.blockDeltas.Unlock()
	// The stored objects are queued before the listener joins, so that it
	// cannot be told of the informer's sync before it has counted them.
	for _, obj := range s.indexer.List() {
		l.add(notification{kind: notifyAdd, obj: obj, initial: true})
	}
	s.processor.add(l)
	if s.sync.done() {
		l.sync.upstreamSynced()
	}
	return l, nil
}

// adjustResyncPeriod applies the one-second minimum to a requested period
// and lowers the resync check period to it before Run (raising it to the
// check period after Run is left to effectiveResyncPeriod). s.mu is held.
func (s *sharedIndexInformer) adjustResyncPeriod(logger klog.Logger, p time.Duration) time.Duration {
	if p <= 0 {
		return p
	}
	if p < minimumResyncPeriod {
		logger.Info("Warning: resync period is too small. Changing it to the minimum allowed value", "resyncPeriod", p, "minimumResyncPeriod", minimumResyncPeriod)
		p = minimumResyncPeriod
	}
	if p >= s.resyncCheckPeriod {
		return p
	}
	if s.started {
		logger.Info("Warning: resync period is smaller than resync check period and the informer has already started. Changing it to the resync check period", "resyncPeriod", p, "resyncCheckPeriod", s.resyncCheckPeriod)
		return s.resyncCheckPeriod
	}
	s.resyncCheckPeriod = p
	s.processor.resyncCheckPeriodChanged(logger, p)
	return p
}

// RemoveEventHandler stops queueing notifications to the handler of
// handle and drops its backlog; a call in progress finishes (wait for it
// with ShutDownEventHandler). Unknown registrations are ignored; values
// not made by this package are an error.
func (s *sharedIndexInformer) RemoveEventHandler(handle ResourceEventHandlerRegistration) error {
	l, ok := handle.(*listener)
	if !ok {
		return fmt.Errorf("cache: RemoveEventHandler given a registration of type %T, not one of this informer's", handle)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.blockDeltas.Lock()
	defer s.blockDeltas.Unlock()
	s.processor.remove(l)
	return nil
}
