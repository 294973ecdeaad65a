package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/loomkit/loom/graph"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the server's Prometheus metrics, in a registry of its own so
// that several servers in one process do not collide.
type metrics struct {
	reg          *prometheus.Registry
	runs         *prometheus.CounterVec
	runsActive   *prometheus.GaugeVec
	runDuration  *prometheus.HistogramVec
	steps        *prometheus.CounterVec
	stepDuration *prometheus.HistogramVec
	tokens       *prometheus.CounterVec
	runErrors    *prometheus.CounterVec
	requests     *prometheus.CounterVec
	reqDuration  *prometheus.HistogramVec
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "loom_runs_total",
			Help: "Runs ended, by agent and status (success, interrupted, error)."}, []string{"agent", "status"}),
		runsActive: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "loom_runs_active",
			Help: "Runs executing now."}, []string{"agent"}),
		runDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "loom_run_duration_seconds",
			Help: "How long runs took, by agent.", Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10)}, []string{"agent"}),
		steps: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "loom_steps_total",
			Help: "Node steps finished and checkpointed, by agent and node."}, []string{"agent", "node"}),
		stepDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "loom_step_duration_seconds",
			Help: "How long node steps took, by agent.", Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}, []string{"agent"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "loom_tokens_total",
			Help: "Model output pieces streamed, by agent and kind (token, reasoning)."}, []string{"agent", "kind"}),
		runErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "loom_run_errors_total",
			Help: "Runs that failed, by agent and error code."}, []string{"agent", "code"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "loom_http_requests_total",
			Help: "HTTP API requests, by route and status code."}, []string{"route", "code"}),
		reqDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "loom_http_request_duration_seconds",
			Help: "HTTP API request durations (streams: until the stream ended), by route.", Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10)}, []string{"route"}),
	}
	m.reg.MustRegister(m.runs, m.runsActive, m.runDuration, m.steps, m.stepDuration, m.tokens, m.runErrors, m.requests, m.reqDuration,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) handler() http.Handler { return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}) }

func (m *metrics) runStarted(agent string) { m.runsActive.WithLabelValues(agent).Inc() }

// attemptEnded counts the end of a run's attempt on this replica that
// did not end the run (it goes on elsewhere, or later).
func (m *metrics) attemptEnded(agent string) { m.runsActive.WithLabelValues(agent).Dec() }

func (m *metrics) runEnded(agent, status, errCode string, took time.Duration) {
	m.runsActive.WithLabelValues(agent).Dec()
	if status == runError {
		m.runErrors.WithLabelValues(agent, errCode).Inc()
	}
	m.runs.WithLabelValues(agent, status).Inc()
	m.runDuration.WithLabelValues(agent).Observe(took.Seconds())
}

// observe counts what one event of a run says.
func (m *metrics) observe(agent string, e *event) {
	switch e.Kind {
	case graph.KindNodeEnd:
		m.steps.WithLabelValues(agent, e.Node).Inc()
		m.stepDuration.WithLabelValues(agent).Observe(e.Duration.Seconds())
	case graph.KindToken, graph.KindReasoning:
		m.tokens.WithLabelValues(agent, string(e.Kind)).Inc()
	}
}

func (m *metrics) request(route string, status int, took time.Duration) {
	if route == "" {
		route = "other"
	}
	if status == 0 {
		status = http.StatusOK
	}
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.reqDuration.WithLabelValues(route).Observe(took.Seconds())
}
