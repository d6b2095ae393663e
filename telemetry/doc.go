// Package telemetry traces what aguic runs with OpenTelemetry and exports
// the spans over OTLP/HTTP, as the standard OTEL_* environment variables
// configure it. Setup reads them; without an OTLP endpoint it returns a nil
// *Tracing, whose methods all do nothing and cost nothing, so that the
// rest of aguic calls them without checking.
//
// A run is one span (invoke_agent, the workflow as the agent), the parent
// of a span per visit of a node of its main flow, which carries the node's
// .wf file, line and column. Under the node that makes them come the calls
// that leave the process: model calls as GenAI client spans (Models),
// backend tool calls as execute_tool spans (Tool), MCP tool calls (MCP)
// and HTTP requests (Transport), with the W3C trace context sent along. A
// run that goes on from where another suspended links to it: the run's
// trace context is kept in the thread's frame (Run.Chain), so the link
// survives restarts. The attribute names follow the OpenTelemetry
// semantic conventions version 1.40.0 (SchemaURL), GenAI included; what
// they have no name for is named under aguic.*.
package telemetry
