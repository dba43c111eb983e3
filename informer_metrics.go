package cache

import "time"

// HandlerMetricsProvider is optionally implemented by the ReflectorMetricsProvider
// given to a shared informer (ReflectorOptions.Metrics through
// SetReflectorOptions) that also wants figures per event handler.
//
// Series are labelled with the informer's name, which its Reflector also
// bears (ReflectorOptions.Name; unset, the Identifier's name and resource
// or "SharedIndexInformer <type>", with " #2", " #3", ... when another
// running informer uses it; see ReflectorConfigurable), and the handler's
// name, and no other label, so there is one set per handler; a handler's
// series are deleted when it is removed or the informer stops.
type HandlerMetricsProvider interface {
	// NewHandlerMetrics is called when a handler starts receiving
	// notifications.
	NewHandlerMetrics(informer, handler string) HandlerMetrics
}

// HandlerMetrics hands out one handler's metrics. Its methods and the
// metrics' writes happen on the handler's goroutine only.
type HandlerMetrics interface {
	// Counter returns the counter of metric, or nil if not wanted.
	Counter(metric string) CounterAdder
	// Gauge returns the gauge of metric, or nil if not wanted.
	Gauge(metric string) GaugeMetric
	// Delete removes every series of this handler; nothing is written after.
	Delete()
}

// Handler metric names.
const (
	// MetricHandlerBacklog is the number of notifications waiting, set
	// after each call (a stuck handler's backlog shows in Health and Stats).
	MetricHandlerBacklog = "informer_handler_backlog"
	// MetricHandlerCalls counts the handler calls made.
	MetricHandlerCalls = "informer_handler_calls_total"
	// MetricHandlerProcessingSeconds is the time spent in handler calls.
	MetricHandlerProcessingSeconds = "informer_handler_processing_seconds_total"
)

// HandlerMetricDescs describes the handler metrics (labels "informer" and
// "handler"), for adapters to declare them up front.
var HandlerMetricDescs = []MetricDesc{
	{Name: MetricHandlerBacklog, Kind: Gauge, Help: "Notifications waiting for the handler, as of its last call."},
	{Name: MetricHandlerCalls, Kind: Counter, Help: "Calls made to the handler."},
	{Name: MetricHandlerProcessingSeconds, Kind: Counter, Help: "Seconds spent in the handler's calls."},
}

// handlerMetrics are a listener's open metrics; the zero value (no
// provider) writes nowhere.
type handlerMetrics struct {
	provided   HandlerMetrics
	backlog    GaugeMetric
	calls, sec CounterAdder
}

// openHandlerMetrics opens the metrics of handler if p wants them.
func openHandlerMetrics(p ReflectorMetricsProvider, informer, handler string) handlerMetrics {
	hp, ok := p.(HandlerMetricsProvider)
	if !ok {
		return handlerMetrics{backlog: discard{}, calls: discard{}, sec: discard{}}
	}
	m := hp.NewHandlerMetrics(informer, handler)
	return handlerMetrics{
		provided: m,
		backlog:  orDiscard(m.Gauge(MetricHandlerBacklog)),
		calls:    orDiscard(m.Counter(MetricHandlerCalls)),
		sec:      orDiscard(m.Counter(MetricHandlerProcessingSeconds)),
	}
}

// called records one call of duration d with backlog waiting after it.
func (m handlerMetrics) called(d time.Duration, backlog int) {
	m.calls.Add(1)
	m.sec.Add(d.Seconds())
	m.backlog.Set(float64(backlog))
}

func (m handlerMetrics) close() {
	if m.provided != nil {
		m.provided.Delete()
	}
}
