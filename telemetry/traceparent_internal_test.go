package telemetry

import (
	"testing"

	"go.opentelemetry.io/otel/trace"
)

func TestTraceparent(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	for _, flags := range []trace.TraceFlags{0, trace.FlagsSampled} {
		sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags})
		tp := formatTraceparent(sc)
		got, ok := parseTraceparent(tp)
		if !ok || got.TraceID() != tid || got.SpanID() != sid || got.TraceFlags() != flags || !got.IsRemote() {
			t.Errorf("parseTraceparent(%q) = %v, %v; want the span context back, remote", tp, got, ok)
		}
	}
	// What W3C Trace Context writes is read too: a later version's flags
	// keep only the sampled bit.
	if got, ok := parseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03"); !ok || got.TraceFlags() != trace.FlagsSampled {
		t.Errorf("flags 03: %v, %v; want sampled", got.TraceFlags(), ok)
	}
	for _, bad := range []string{
		"",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
		"00-4bf92f3577b34da6a3ce929d0e0e473x-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-zz",
	} {
		if _, ok := parseTraceparent(bad); ok {
			t.Errorf("parseTraceparent(%q) is ok, want refused", bad)
		}
	}
}
