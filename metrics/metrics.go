// Package metrics is what toolshed reports to Prometheus: searches, describes and calls by
// outcome, their latency, the upstream servers' health and restarts, client sessions and
// the tokens tool search saves. docs/metrics.md lists every metric.
//
// A Metrics has a registry of its own, never Prometheus' global default one, so that two
// gateways in one process (tests, an embedding program) count apart. A nil *Metrics is
// valid and records nothing: every method returns at once, so a gateway without metrics
// pays one nil check per event.
package metrics

import (
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Outcomes of a search or a describe.
const (
	OK    = "ok"
	Error = "error"
)

// Refused is the call outcome of a call that did not reach its tool because the gateway
// refused it: an unknown tool or one out of the profile's scope, a call the hooks deny,
// the user declined or the rate limit stops. The other call outcomes are the search log's
// (see searchlog.Outcome*).
const Refused = "refused"

// CallOutcomes are the values of toolshed_calls_total's outcome label: each is reported,
// at 0, for every server from its first state change, so that a rate over a series that
// has not moved yet is 0 rather than missing.
var CallOutcomes = []string{"ok", "tool_error", "failed", "timeout", "cancelled", "unavailable", Refused}

// ErrorCodes are the values of toolshed_errors_total's code label: the error codes toolshed
// answers a search, a describe or a call with (the structured content's "error"), and
// tool_error for a call whose tool answered with an error of its own. Any other value
// counts as OtherError, so that no server or client can grow the label set.
var ErrorCodes = []string{"invalid_tool_input", "unavailable", "too_many_requests", "execution_time_exceeded", "permission_denied", "tool_error", OtherError}

// OtherError is the code label of an error whose code is not one of ErrorCodes.
const OtherError = "other"

// Transports of a client session.
const (
	Stdio = "stdio"
	HTTP  = "http"
)

// Ops of toolshed_request_duration_seconds.
const (
	OpSearch   = "search"
	OpDescribe = "describe"
	OpCall     = "call"
)

// Metrics holds toolshed's metrics. Create it with New; a nil *Metrics records nothing.
type Metrics struct {
	reg *prometheus.Registry

	searches, describes *prometheus.CounterVec
	// The children of searches and describes, by success; of calls, by server and
	// outcome (a sync.Map of [2]string to prometheus.Counter), filled as they come:
	// counting is then a map load and an atomic add, not a hash of the labels.
	searchOK, searchErr, describeOK, describeErr prometheus.Counter
	calls                                        *prometheus.CounterVec
	errors                                       *prometheus.CounterVec
	callCounters                                 sync.Map
	duration                                     *prometheus.HistogramVec
	// The duration histogram's children, looked up once: an observation is then an
	// atomic add, not a hash of its labels.
	searchDur, describeDur, callDur prometheus.Observer

	upstreamUp, upstreamTools *prometheus.GaugeVec
	restarts                  *prometheus.CounterVec

	sessionsStarted *prometheus.CounterVec
	sessionsLive    *prometheus.GaugeVec

	catalogTokens prometheus.Gauge
	tokensSaved   prometheus.Counter
}

// Buckets of toolshed_request_duration_seconds: from 100 µs (a search, a describe) to a
// minute (a slow tool), roughly 2.5 to a step.
var Buckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// New returns the metrics of one gateway, labelled in toolshed_build_info with version
// and replica (the replica id, empty when none). Its registry also has the Go runtime's
// and the process' collectors.
func New(version, replica string) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.searches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "toolshed_searches_total", Help: "tool_search calls, by outcome (ok or error).",
	}, []string{"outcome"})
	m.describes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "toolshed_describes_total", Help: "tool_describe calls, by outcome (ok or error).",
	}, []string{"outcome"})
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "toolshed_calls_total", Help: "Calls of real tools, direct or through tool_call, by server and outcome (ok, tool_error, failed, timeout, cancelled, unavailable, refused).",
	}, []string{"server", "outcome"})
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "toolshed_errors_total", Help: "Searches, describes and calls that ended in an error, by op (search, describe, call) and the error code the client got (invalid_tool_input, unavailable, too_many_requests, execution_time_exceeded, permission_denied, tool_error, other).",
	}, []string{"op", "code"})
	for _, op := range []string{OpSearch, OpDescribe, OpCall} {
		for _, c := range ErrorCodes {
			m.errors.WithLabelValues(op, c)
		}
	}
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "toolshed_request_duration_seconds", Help: "How long toolshed took to answer a search, a describe or a call, in seconds.", Buckets: Buckets,
	}, []string{"op"})
	m.searchDur = m.duration.WithLabelValues(OpSearch)
	m.describeDur = m.duration.WithLabelValues(OpDescribe)
	m.callDur = m.duration.WithLabelValues(OpCall)
	m.upstreamUp = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "toolshed_upstream_up", Help: "1 when the upstream server is connected and its tools are served, else 0.",
	}, []string{"server"})
	m.upstreamTools = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "toolshed_upstream_tools", Help: "Tools the upstream server lists (0 while it is not up).",
	}, []string{"server"})
	m.restarts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "toolshed_upstream_restarts_total", Help: "Times the upstream server's connection or process ended and toolshed restarted it (or failed to start it).",
	}, []string{"server"})
	m.sessionsLive = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "toolshed_sessions", Help: "Client sessions open now, by transport (stdio or http).",
	}, []string{"transport"})
	m.sessionsStarted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "toolshed_sessions_started_total", Help: "Client sessions that initialized, by transport (stdio or http).",
	}, []string{"transport"})
	m.catalogTokens = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "toolshed_catalog_tokens", Help: "Tokens (o200k_base) of every tool definition of the catalog in full: what listing every tool would cost a model.",
	})
	m.tokensSaved = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "toolshed_tokens_saved_total", Help: "Tokens saved by tool search, summed over sessions: for each session, what listing every tool of its profile in full costs minus what its first tools/list cost.",
	})
	info := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "toolshed_build_info", Help: "1, labelled with toolshed's version and its replica id (empty when none).",
	}, []string{"version", "replica"})
	info.WithLabelValues(version, replica).Set(1)
	m.searchOK, m.searchErr = m.searches.WithLabelValues(OK), m.searches.WithLabelValues(Error)
	m.describeOK, m.describeErr = m.describes.WithLabelValues(OK), m.describes.WithLabelValues(Error)
	for _, t := range []string{Stdio, HTTP} {
		m.sessionsLive.WithLabelValues(t)
		m.sessionsStarted.WithLabelValues(t)
	}
	m.reg.MustRegister(m.searches, m.describes, m.calls, m.errors, m.duration, m.upstreamUp, m.upstreamTools, m.restarts,
		m.sessionsLive, m.sessionsStarted, m.catalogTokens, m.tokensSaved, info,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry is the registry the metrics are in, for a caller that adds its own.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in Prometheus' exposition formats (text, or what the
// scraper negotiates). A nil *Metrics serves 404.
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Search counts a tool_search that took d and failed with the error code code ("" when
// it succeeded; see failed).
func (m *Metrics) Search(code string, d time.Duration) {
	if m == nil {
		return
	}
	if code == "" {
		m.searchOK.Inc()
	} else {
		m.searchErr.Inc()
		m.failed(OpSearch, code)
	}
	m.searchDur.Observe(d.Seconds())
}

// Describe counts a tool_describe that took d and failed with the error code code (""
// when it succeeded).
func (m *Metrics) Describe(code string, d time.Duration) {
	if m == nil {
		return
	}
	if code == "" {
		m.describeOK.Inc()
	} else {
		m.describeErr.Inc()
		m.failed(OpDescribe, code)
	}
	m.describeDur.Observe(d.Seconds())
}

// Call counts a call of a tool of server (empty when the tool is unknown) that ended
// with outcome (one of CallOutcomes) after d, and the error code the client got (""
// when none).
func (m *Metrics) Call(server, outcome, code string, d time.Duration) {
	if m == nil {
		return
	}
	m.callCounter(server, outcome).Inc()
	if code != "" {
		m.failed(OpCall, code)
	}
	m.callDur.Observe(d.Seconds())
}

// callCounter is the calls counter of server and outcome.
func (m *Metrics) callCounter(server, outcome string) prometheus.Counter {
	key := [2]string{server, outcome}
	if c, ok := m.callCounters.Load(key); ok {
		return c.(prometheus.Counter)
	}
	c, _ := m.callCounters.LoadOrStore(key, m.calls.WithLabelValues(server, outcome))
	return c.(prometheus.Counter)
}

// failed counts a search, describe or call (op) that ended in an error the client got
// with code (OtherError when code is not one of ErrorCodes).
func (m *Metrics) failed(op, code string) {
	if !slices.Contains(ErrorCodes, code) {
		code = OtherError
	}
	m.errors.WithLabelValues(op, code).Inc()
}

// Upstream reports an upstream server's state: up when its tools are served, and how
// many it lists.
func (m *Metrics) Upstream(server string, up bool, tools int) {
	if m == nil {
		return
	}
	v := 0.0
	if up {
		v = 1
	}
	m.upstreamUp.WithLabelValues(server).Set(v)
	m.upstreamTools.WithLabelValues(server).Set(float64(tools))
	m.restarts.WithLabelValues(server)
	for _, o := range CallOutcomes {
		m.callCounter(server, o)
	}
}

// Restart counts one end of an upstream server's life, after which toolshed starts it
// again.
func (m *Metrics) Restart(server string) {
	if m == nil {
		return
	}
	m.restarts.WithLabelValues(server).Inc()
}

// SessionStarted counts a client session that initialized over transport (Stdio or HTTP).
func (m *Metrics) SessionStarted(transport string) {
	if m == nil {
		return
	}
	m.sessionsStarted.WithLabelValues(transport).Inc()
	m.sessionsLive.WithLabelValues(transport).Inc()
}

// SessionEnded counts the end of a session SessionStarted counted.
func (m *Metrics) SessionEnded(transport string) {
	if m == nil {
		return
	}
	m.sessionsLive.WithLabelValues(transport).Dec()
}

// CatalogTokens reports what every tool definition of the catalog costs in full.
func (m *Metrics) CatalogTokens(n int) {
	if m == nil {
		return
	}
	m.catalogTokens.Set(float64(n))
}

// TokensSaved adds the tokens a session's first tools/list saved.
func (m *Metrics) TokensSaved(n int) {
	if m == nil || n <= 0 {
		return
	}
	m.tokensSaved.Add(float64(n))
}
