package cache

import (
	"cmp"
	"context"
	"time"
)

// InformerHealthReporter is implemented by this package's shared informers
// (type-assert the SharedIndexInformer the constructors return) and is
// beyond client-go: waiting with a cause, health, and figures per handler.
type InformerHealthReporter interface {
	// WaitForSync blocks until the informer has synced (nil), ctx ends,
	// or the informer has stopped (at once if it had already); the error
	// then wraps ErrNotSynced, ctx's error or ErrStopped, and the
	// Reflector's last list/watch error, from the first failure on
	// (apierrors.IsForbidden works on it), and says when the Reflector
	// waits for a WatchList's initial-events-end bookmark (see
	// Reflector.WaitForSync).
	WaitForSync(ctx context.Context) error
	// Health combines the Reflector's health with the handlers' (and,
	// for an informer behind a gate such as a ring's, the gate's: see
	// InformerHealth.Gate); once the informer has stopped, the
	// Reflector's State is Stopped (since the stop), with its HasSynced
	// and LastError as they were.
	Health() InformerHealth
	// Stats returns the Reflector's figures and each handler's.
	Stats() InformerStats
	// SetHandlerLimits sets what Health reports as a handler problem; it
	// fails once the informer has started.
	SetHandlerLimits(HandlerLimits) error
}

// HandlerRegistration is implemented by the registrations this package's
// informers return, beyond client-go's ResourceEventHandlerRegistration.
type HandlerRegistration interface {
	ResourceEventHandlerRegistration
	// WaitForSync blocks until HasSynced (nil), ctx ends, or the informer
	// has stopped; the error then wraps ErrNotSynced, ctx's error (or
	// ErrStopped) and the informer's last error.
	WaitForSync(ctx context.Context) error
	// ShutdownChan is closed when the handler will not be called again
	// after its removal or the informer's stop.
	ShutdownChan() <-chan struct{}
}

var (
	_ InformerHealthReporter = &sharedIndexInformer{}
	_ HandlerRegistration    = &listener{}
)

// HandlerLimits bounds what Health accepts from a handler.
type HandlerLimits struct {
	// MaxBacklog: a handler with more notifications waiting is reported
	// (HandlerBacklog). Zero means 1024; negative turns the check off.
	MaxBacklog int
	// MaxCallDuration: a handler that has not returned from a call for
	// longer is reported (HandlerStuck). Zero means one minute; negative
	// turns the check off.
	MaxCallDuration time.Duration
}

const (
	defaultMaxBacklog      = 1024
	defaultMaxCallDuration = time.Minute
)

func (l HandlerLimits) withDefaults() HandlerLimits {
	l.MaxBacklog = cmp.Or(l.MaxBacklog, defaultMaxBacklog)
	l.MaxCallDuration = cmp.Or(l.MaxCallDuration, defaultMaxCallDuration)
	return l
}

// HandlerProblemReason says what is wrong with a handler.
type HandlerProblemReason string

const (
	// HandlerBacklog: more notifications wait than HandlerLimits.MaxBacklog.
	HandlerBacklog HandlerProblemReason = "Backlog"
	// HandlerStuck: a call has run longer than HandlerLimits.MaxCallDuration.
	HandlerStuck HandlerProblemReason = "Stuck"
)

// HandlerProblem reports one handler outside its limits.
type HandlerProblem struct {
	// Name is the handler's name (as in the logs; not necessarily unique).
	Name    string
	Reason  HandlerProblemReason
	Backlog int
	// BusyFor is how long the call in progress has run (0 if none).
	BusyFor time.Duration
}

// InformerHealth is a snapshot of an informer's health.
type InformerHealth struct {
	// Reflector is the Reflector's health (State Syncing before Run,
	// Stopped once the informer has stopped).
	Reflector Health
	// Handlers lists the handlers outside their limits, in registration
	// order; a stuck handler with a backlog is listed once, as stuck.
	Handlers []HandlerProblem
	// Gate says why something beyond the Reflector holds the informer
	// back, for informers that put a gate in front of this package's: an
	// elastic ring's informer (package ring) sets it while its ring is not
	// formed, to an error wrapping ring.ErrNotFormed and the ring's last
	// error while it is current (apierrors.IsForbidden works on it when
	// its Leases are forbidden), which also says whether Run was called, whether the
	// replica is fenced or not ready, and which member it waits for. The
	// Reflector of such an informer may not have started at all (Syncing,
	// with no error of its own). Nil for this package's own informers.
	Gate error
	// Healthy: the Reflector is Synced, no handler has a problem and no
	// Gate holds the informer back.
	Healthy bool
}

// HandlerStats are one handler's figures since it was added.
type HandlerStats struct {
	Name string
	// Backlog is the number of notifications waiting; MaxBacklog the most
	// that ever waited.
	Backlog, MaxBacklog int
	// Delivered counts the calls made (a call that panicked included).
	Delivered uint64
	// ProcessingTime is the time spent in calls; SlowestCall the longest.
	ProcessingTime, SlowestCall time.Duration
	// BusyFor is how long the call in progress has run (0 if none).
	BusyFor time.Duration
	Synced  bool
}

// InformerStats are an informer's figures: its Reflector's (zero before
// Run) and its handlers', in registration order.
type InformerStats struct {
	Reflector Stats
	Handlers  []HandlerStats
	// Store is the compact store's figures (ReflectorOptions.Compact),
	// nil when the informer holds its objects decoded.
	Store *CompactStats
}

// SetHandlerLimits implements InformerHealthReporter.
func (s *sharedIndexInformer) SetHandlerLimits(l HandlerLimits) error {
	return s.beforeStart(func() { s.limits = l.withDefaults() })
}

// Health implements InformerHealthReporter.
func (s *sharedIndexInformer) Health() InformerHealth {
	s.mu.Lock()
	limits, ctrl, stopped, stoppedAt := s.limits, s.ctrl, s.stopped, s.stoppedAt
	s.mu.Unlock()
	var h InformerHealth
	h.Reflector = Health{State: Syncing}
	if ctrl != nil {
		if r := ctrl.runningReflector(); r != nil {
			h.Reflector = r.Health()
		}
	}
	if stopped {
		// The Reflector's health is as it was when it stopped; what it
		// learned (HasSynced, LastError) stays.
		h.Reflector.State, h.Reflector.Reason, h.Reflector.Since = Stopped, ReasonNone, stoppedAt
	}
	now := time.Now()
	for _, st := range s.processor.stats(now) {
		switch {
		case limits.MaxCallDuration > 0 && st.BusyFor > limits.MaxCallDuration:
			h.Handlers = append(h.Handlers, HandlerProblem{Name: st.Name, Reason: HandlerStuck, Backlog: st.Backlog, BusyFor: st.BusyFor})
		case limits.MaxBacklog > 0 && st.Backlog > limits.MaxBacklog:
			h.Handlers = append(h.Handlers, HandlerProblem{Name: st.Name, Reason: HandlerBacklog, Backlog: st.Backlog, BusyFor: st.BusyFor})
		}
	}
	h.Healthy = h.Reflector.State == Synced && len(h.Handlers) == 0
	return h
}

// Stats implements InformerHealthReporter.
func (s *sharedIndexInformer) Stats() InformerStats {
	s.mu.Lock()
	ctrl := s.ctrl
	s.mu.Unlock()
	var st InformerStats
	if ctrl != nil {
		if r := ctrl.runningReflector(); r != nil {
			st.Reflector = r.Stats()
		}
	}
	st.Handlers = s.processor.stats(time.Now())
	st.Store = s.indexer.compactStats()
	return st
}

// stats returns every listener's figures at now.
func (p *processor) stats(now time.Time) []HandlerStats {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]HandlerStats, 0, len(p.listeners))
	for _, l := range p.listeners {
		out = append(out, l.stats(now))
	}
	return out
}

// stats returns the listener's figures at now.
func (l *listener) stats(now time.Time) HandlerStats {
	l.mu.Lock()
	backlog, most := len(l.backlog)-l.head+l.batched, l.mostPending
	l.mu.Unlock()
	st := HandlerStats{
		Name:           l.name,
		Backlog:        backlog,
		MaxBacklog:     most,
		Delivered:      l.delivered.Load(),
		ProcessingTime: time.Duration(l.busyTotal.Load()),
		SlowestCall:    time.Duration(l.slowest.Load()),
		Synced:         l.sync.done(),
	}
	if since := l.busySince.Load(); since != 0 {
		st.BusyFor = now.Sub(time.Unix(0, since))
	}
	return st
}

// callEnded records the figures of a call that began at start.
func (l *listener) callEnded(start time.Time) {
	d := time.Since(start)
	l.busySince.Store(0)
	l.delivered.Add(1)
	l.busyTotal.Add(int64(d))
	for {
		cur := l.slowest.Load()
		if int64(d) <= cur || l.slowest.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}
