package telemetry

import (
	"context"
	"strconv"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/aguic/aguic/vm"
)

// The aguic.* attributes: what the semantic conventions have no name for.
const (
	AttrRunID         = attribute.Key("aguic.run.id")         // the run's id
	AttrTrigger       = attribute.Key("aguic.run.trigger")    // what began the run: request, queued, wake, recovery
	AttrOutcome       = attribute.Key("aguic.run.outcome")    // finished, suspended, cancelled, failed
	AttrWait          = attribute.Key("aguic.run.wait")       // what a suspended run waits for
	AttrNodeKind      = attribute.Key("aguic.node.kind")      // the node's kind
	AttrNodeNext      = attribute.Key("aguic.node.next")      // the node the flow goes on with, after a branch or a failure
	AttrNodeSuspended = attribute.Key("aguic.node.suspended") // the run suspended at the node
	AttrMCPServer     = attribute.Key("aguic.mcp.server")     // the MCP server's name in the program
)

// hiddenKey is the frame's hidden entry that keeps the traceparent of
// the thread's last run.
const hiddenKey = "aguic.traceparent"

// RunInfo is what the span of a run says of it.
type RunInfo struct {
	Workflow, Thread, RunID string
	// Trigger is what began the run: "request" (an AG-UI or MCP
	// request), "queued" (a request queued behind another run), "wake"
	// (a timer), "recovery" (a run a crash left, resumed from its last
	// save).
	Trigger string
}

// Run is the span of one run and what it knows of the node that runs. A
// nil *Run does nothing.
type Run struct {
	t    *Tracing
	span trace.Span
	ctx  context.Context // carries span: the parent of the nodes' spans

	mu   sync.Mutex
	node trace.Span      // the span of the node of the main flow that runs; nil between nodes
	next vm.NodeObserver // Nodes' next
}

// runKey is the context key of the *Run a run's context carries.
type runKey struct{}

// StartRun starts the span of a run, a child of the span parent carries
// (a caller's, from its traceparent header) or the root of a new trace.
func (t *Tracing) StartRun(parent context.Context, info RunInfo) *Run {
	if t == nil {
		return nil
	}
	trigger := info.Trigger
	if trigger == "" {
		trigger = "request"
	}
	ctx, span := t.tracer.Start(context.WithoutCancel(parent), "invoke_agent "+info.Workflow,
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			semconv.GenAIOperationNameInvokeAgent,
			semconv.GenAIAgentName(info.Workflow),
			semconv.GenAIConversationID(info.Thread),
			AttrRunID.String(info.RunID),
			AttrTrigger.String(trigger),
		))
	return &Run{t: t, span: span, ctx: ctx}
}

// Context returns ctx carrying the run: the calls a run makes in it
// (models, tools, HTTP) are traced under the node that makes them.
func (r *Run) Context(ctx context.Context) context.Context {
	if r == nil {
		return ctx
	}
	return context.WithValue(trace.ContextWithSpan(ctx, r.span), runKey{}, r)
}

// Chain links the run to the thread's last run, whose trace context f
// keeps (a conversation's turn before, the run that suspended where this
// one goes on), and keeps the run's own in f for the next: a multi-day
// approval reads as one story, across restarts. f is the run's frame,
// before it runs (store.Turn.Frame).
func (r *Run) Chain(f *vm.Frame) {
	if r == nil || f == nil {
		return
	}
	if tp, ok := f.Hidden[hiddenKey].(string); ok {
		if prev, ok := parseTraceparent(tp); ok {
			r.span.AddLink(trace.Link{SpanContext: prev})
		}
	}
	switch sc := r.span.SpanContext(); {
	case sc.IsValid() && r.span.IsRecording():
		f.SetHidden(hiddenKey, formatTraceparent(sc))
	case f.Hidden[hiddenKey] != nil:
		// A run the sampler left out: the next run has no span to link to.
		f.SetHidden(hiddenKey, nil)
	}
}

// formatTraceparent writes sc as W3C Trace Context writes a traceparent
// header (version 00).
func formatTraceparent(sc trace.SpanContext) string {
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}

// parseTraceparent reads what formatTraceparent wrote: the span context of
// a span that ended, in this process or another.
func parseTraceparent(tp string) (trace.SpanContext, bool) {
	const size = len("00-") + 32 + 1 + 16 + 1 + 2
	if len(tp) != size || tp[:3] != "00-" || tp[35] != '-' || tp[52] != '-' {
		return trace.SpanContext{}, false
	}
	tid, err := trace.TraceIDFromHex(tp[3:35])
	if err != nil {
		return trace.SpanContext{}, false
	}
	sid, err := trace.SpanIDFromHex(tp[36:52])
	if err != nil {
		return trace.SpanContext{}, false
	}
	flags, err := strconv.ParseUint(tp[53:], 16, 8)
	if err != nil {
		return trace.SpanContext{}, false
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(flags) & trace.FlagsSampled, Remote: true}), true
}

// Nodes returns the observer that traces the nodes of the run's main flow
// and passes what it learns on to next, which may be nil. Without a run
// it returns next.
func (r *Run) Nodes(next vm.NodeObserver) vm.NodeObserver {
	if r == nil {
		return next
	}
	r.next = next
	return (*runNodes)(r)
}

// nodeStart is what starting the span of a node takes, the same at
// every visit: made once per node of the program.
type nodeStart struct {
	name string
	opt  trace.SpanStartOption
}

// nodeStart returns the span name and attributes of node n's visits.
func (t *Tracing) nodeStart(n *vm.Node) *nodeStart {
	if s, ok := t.nodes.Load(n); ok {
		return s.(*nodeStart)
	}
	attrs := []attribute.KeyValue{AttrNodeKind.String(n.Kind)}
	if sp := n.Span; sp.Start.IsValid() {
		attrs = append(attrs, semconv.CodeFilePath(sp.File), semconv.CodeLineNumber(sp.Start.Line), semconv.CodeColumnNumber(sp.Start.Col))
	}
	s, _ := t.nodes.LoadOrStore(n, &nodeStart{name: n.Kind + " " + n.ID, opt: trace.WithAttributes(attrs...)})
	return s.(*nodeStart)
}

// runNodes is the NodeObserver of a Run.
type runNodes Run

// NodeStarted starts the span of node n.
func (o *runNodes) NodeStarted(n *vm.Node) error {
	r := (*Run)(o)
	if !r.span.IsRecording() {
		// The sampler left the run out, and so its nodes.
		if r.next != nil {
			return r.next.NodeStarted(n)
		}
		return nil
	}
	s := r.t.nodeStart(n)
	_, span := r.t.tracer.Start(r.ctx, s.name, s.opt)
	r.mu.Lock()
	r.node = span
	r.mu.Unlock()
	if r.next != nil {
		return r.next.NodeStarted(n)
	}
	return nil
}

// NodeFinished ends the span of node n.
func (o *runNodes) NodeFinished(n *vm.Node, end vm.NodeEnd) error {
	r := (*Run)(o)
	r.mu.Lock()
	span := r.node
	r.node = nil
	r.mu.Unlock()
	if span != nil {
		if end.Next != "" && (len(n.Edges) > 1 || end.Err != nil) {
			// Which way a branch went, or the catch a failure went to: a
			// node of one edge that completed goes on with it.
			span.SetAttributes(AttrNodeNext.String(end.Next))
		}
		if e := end.Err; e != nil {
			span.SetAttributes(semconv.ErrorTypeKey.String(e.Code))
			span.SetStatus(codes.Error, e.Message)
		}
		span.End()
	}
	if r.next != nil {
		return r.next.NodeFinished(n, end)
	}
	return nil
}

// End ends the run's span with its outcome, o, or err when the run could
// not go on (its store failed, another process took it over). A node the
// run suspended at ends with it.
func (r *Run) End(o vm.Outcome, err error) {
	if r == nil {
		return
	}
	r.mu.Lock()
	node := r.node
	r.node = nil
	r.mu.Unlock()
	if node != nil {
		if o.Status == vm.Suspended {
			node.SetAttributes(AttrNodeSuspended.Bool(true))
		}
		node.End()
	}
	// One call of SetAttributes: each copies the span's attributes.
	var attrs [3]attribute.KeyValue
	set := attrs[:0]
	switch {
	case err != nil:
		set = append(set, AttrOutcome.String("error"), semconv.ErrorTypeKey.String("_OTHER"))
		r.span.SetStatus(codes.Error, err.Error())
	default:
		set = append(set, AttrOutcome.String(string(o.Status)))
		if o.Wait != nil {
			set = append(set, AttrWait.String(string(o.Wait.Kind)))
		}
		if o.Status == vm.Failed && o.Err != nil {
			set = append(set, semconv.ErrorTypeKey.String(o.Err.Code))
			r.span.SetStatus(codes.Error, o.Err.Message)
		}
	}
	r.span.SetAttributes(set...)
	r.span.End()
}

// parent returns the context a call the run makes in ctx starts its span
// in: under the node of the main flow that runs, unless a span of a call
// (a tool's) is ctx's already.
func parent(ctx context.Context) context.Context {
	r, _ := ctx.Value(runKey{}).(*Run)
	if r == nil || !r.span.IsRecording() {
		// No run, or one the sampler left out: its calls have no node to
		// be children of.
		return ctx
	}
	// Span values are not all comparable (the SDK's non-recording span
	// is not): tell the run's span by its id.
	if trace.SpanFromContext(ctx).SpanContext().SpanID() != r.span.SpanContext().SpanID() {
		return ctx
	}
	r.mu.Lock()
	node := r.node
	r.mu.Unlock()
	if node == nil {
		return ctx
	}
	return trace.ContextWithSpan(ctx, node)
}
