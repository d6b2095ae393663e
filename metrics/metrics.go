// Package metrics measures a serving process for Prometheus: its runs
// and turns, their latency, the tokens and errors of model calls, tool
// calls, store commits, the threads of the store by status and what
// recovery does. A Metrics holds its own registry (with the Go runtime's
// and the process's collectors) and serves it as the Prometheus text
// format, or OpenMetrics when the scraper asks for it (Handler).
//
// Each seam has one observer: the server reports its runs (Run), the host
// its recovery and wakes, a wrapper of the store times its commits
// (Store), a wrapper of the model resolver counts model calls (Models),
// and stdlib reports backend tool calls (ToolCall). Every method works on
// a nil *Metrics and does nothing, so the callers need no check of their
// own when metrics are off.
//
// Labels are bounded: workflow, model and tool names come from the .wf
// files (and the model allow-list); outcomes, kinds and statuses are
// fixed sets. Scopes, threads, runs and users are never labels.
package metrics

import (
	"context"
	"github.com/aguic/aguic/stdlib"
	"net/http"
	"regexp"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// namespace prefixes every metric's name.
const namespace = "aguic"

// Buckets of the latency histograms, in seconds.
var (
	// turnBuckets spans a turn of pure nodes (a millisecond) to one that
	// waits on models and tools for minutes.
	turnBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	// callBuckets spans a local tool to a slow model answer.
	callBuckets = []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	// commitBuckets spans a lazy commit (microseconds) to a synced one on
	// a slow disk or a remote database.
	commitBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}
)

// Metrics is the metrics of one process. The zero value is not usable;
// New makes one, and a nil *Metrics measures nothing.
type Metrics struct {
	reg *prometheus.Registry

	runs       *prometheus.CounterVec
	turns      *prometheus.CounterVec
	turnTime   *prometheus.HistogramVec
	firstEvent *prometheus.HistogramVec
	inFlight   prometheus.Gauge

	modelCalls  *prometheus.CounterVec
	modelErrors *prometheus.CounterVec
	modelTime   *prometheus.HistogramVec
	tokens      *prometheus.CounterVec

	toolTime   *prometheus.HistogramVec
	toolErrors *prometheus.CounterVec
	mcpCalls   *prometheus.CounterVec

	commitTime *prometheus.HistogramVec
	syncTime   prometheus.Histogram

	claimed prometheus.Counter
}

// New returns the metrics of a process, registered in a registry of their
// own with the Go runtime's and the process's collectors.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg: reg,
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "runs_total",
			Help: "Runs requested of the AG-UI routes and /mcp that ended in this process, by workflow and outcome (finished, suspended, failed, cancelled, handed_over, rejected, invalid_input).",
		}, []string{"workflow", "outcome"}),
		turns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "turns_total",
			Help: "Turns this process executed, by workflow, outcome and origin: request (a run requested of the AG-UI routes or /mcp), recovery (a run a crash or a dead replica left, resumed), wake (a sleeping thread woken).",
		}, []string{"workflow", "outcome", "origin"}),
		turnTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "turn_duration_seconds",
			Help:    "How long the turns of requests and wakes took, from their start to their durable end, by workflow.",
			Buckets: turnBuckets,
		}, []string{"workflow"}),
		firstEvent: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "first_event_seconds",
			Help:    "How long a request's run took to emit its first event after RUN_STARTED, by workflow.",
			Buckets: turnBuckets,
		}, []string{"workflow"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "runs_in_flight",
			Help: "Turns of requests and wakes executing in this process now.",
		}),
		modelCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "model_calls_total",
			Help: "Calls to a model provider (each try of a retried call), by model.",
		}, []string{"model"}),
		modelErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "model_errors_total",
			Help: "Calls to a model provider that failed (each failed try), by model.",
		}, []string{"model"}),
		modelTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "model_call_duration_seconds",
			Help:    "How long model calls took, to the end of their streamed answer, by model.",
			Buckets: callBuckets,
		}, []string{"model"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "model_tokens_total",
			Help: "Tokens model calls used, by model and type (input, output).",
		}, []string{"model", "type"}),
		toolTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "tool_call_duration_seconds",
			Help:    "How long the backend tool calls of model nodes took, by kind (expr, http, call, mcp) and tool.",
			Buckets: callBuckets,
		}, []string{"kind", "tool"}),
		toolErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "tool_call_errors_total",
			Help: "Backend tool calls of model nodes that failed, by kind and tool.",
		}, []string{"kind", "tool"}),
		mcpCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "mcp_tool_calls_total",
			Help: "Calls of the workflows served as MCP tools at {base}/mcp, by tool and outcome.",
		}, []string{"tool", "outcome"}),
		commitTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "store_commit_duration_seconds",
			Help:    "How long commits to the store took, by mode: synced (durable when it returns) or lazy.",
			Buckets: commitBuckets,
		}, []string{"mode"}),
		syncTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "store_sync_duration_seconds",
			Help:    "How long syncs of the store's lazy commits took.",
			Buckets: commitBuckets,
		}),
		claimed: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "stranded_runs_claimed_total",
			Help: "Runs left by a crash or a dead replica whose threads this process claimed to resume them.",
		}),
	}
	reg.MustRegister(
		goCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.runs, m.turns, m.turnTime, m.firstEvent, m.inFlight,
		m.modelCalls, m.modelErrors, m.modelTime, m.tokens,
		m.toolTime, m.toolErrors, m.mcpCalls,
		m.commitTime, m.syncTime,
		m.claimed,
	)
	return m
}

// goCollector is the collector of the Go runtime's metrics: the base
// ones (goroutines, threads, GC pauses, the Go version) and those of
// runtime/metrics on the GC, memory and the scheduler, instead of the
// older go_memstats_* ones, two of which (go_memstats_alloc_bytes, a
// gauge, and go_memstats_alloc_bytes_total, a counter) name one family in
// OpenMetrics, which its parsers refuse.
func goCollector() prometheus.Collector {
	return collectors.NewGoCollector(
		collectors.WithGoCollectorMemStatsMetricsDisabled(),
		collectors.WithGoCollectorRuntimeMetrics(collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/(gc|memory|sched)/`)}),
	)
}

// Registry is the registry the metrics are in, for a program that adds
// its own.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus text format, or in
// OpenMetrics when the scraper's Accept header asks for it; a failing
// collector makes it answer 500.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// The origins of turns.
const (
	OriginRequest  = "request"
	OriginRecovery = "recovery"
	OriginWake     = "wake"
)

// TurnStarted counts a turn of a request or a wake executing in this
// process until TurnEnded.
func (m *Metrics) TurnStarted() {
	if m != nil {
		m.inFlight.Inc()
	}
}

// TurnEnded counts a turn of workflow, of a request or a wake (origin),
// that TurnStarted counted, which ended with outcome after took.
func (m *Metrics) TurnEnded(workflow, outcome, origin string, took time.Duration) {
	if m == nil {
		return
	}
	m.inFlight.Dec()
	m.turns.WithLabelValues(workflow, outcome, origin).Inc()
	m.turnTime.WithLabelValues(workflow).Observe(took.Seconds())
}

// Recovered counts the turn of a run of workflow that recovery resumed,
// with its outcome (failed for one that could not be resumed).
func (m *Metrics) Recovered(workflow, outcome string) {
	if m != nil {
		m.turns.WithLabelValues(workflow, outcome, OriginRecovery).Inc()
	}
}

// RunEnded counts a requested run of workflow that ended with outcome.
func (m *Metrics) RunEnded(workflow, outcome string) {
	if m != nil {
		m.runs.WithLabelValues(workflow, outcome).Inc()
	}
}

// FirstEvent records how long a run of workflow took to its first event.
func (m *Metrics) FirstEvent(workflow string, took time.Duration) {
	if m != nil {
		m.firstEvent.WithLabelValues(workflow).Observe(took.Seconds())
	}
}

// MCPToolCall counts a call of the MCP tool that serves a workflow, with
// its outcome.
func (m *Metrics) MCPToolCall(tool, outcome string) {
	if m != nil {
		m.mcpCalls.WithLabelValues(tool, outcome).Inc()
	}
}

// Claimed counts n stranded runs whose threads this process claimed.
func (m *Metrics) Claimed(n int) {
	if m != nil && n > 0 {
		m.claimed.Add(float64(n))
	}
}

// ToolCall is an observer of stdlib.Options.ToolCall: it times the
// backend tool calls of model nodes by the tool's kind and name. A nil
// *Metrics returns nil, which stdlib takes as no observer.
func (m *Metrics) ToolCall() stdlib.ToolCallObserver {
	if m == nil {
		return nil
	}
	return func(ctx context.Context, call stdlib.ToolCallInfo) (context.Context, func(error)) {
		start := time.Now()
		return ctx, func(err error) {
			m.toolTime.WithLabelValues(call.Kind, call.Name).Observe(time.Since(start).Seconds())
			if err != nil {
				m.toolErrors.WithLabelValues(call.Kind, call.Name).Inc()
			}
		}
	}
}
