package main

import (
	"context"
	"log/slog"
	"runtime/debug"

	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/telemetry"
)

// buildVersionText is this build's version, "devel" when unknown.
func buildVersionText() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return buildVersion(bi).Version
	}
	return "devel"
}

// setupTracing sets tracing up as the OTEL_* variables say (nil when
// they ask for none) and makes the model calls, backend tool calls and
// http nodes of opts traced by it; what the SDK reports of itself goes to
// log. The caller shuts it down, which flushes the spans left.
func setupTracing(ctx context.Context, opts *stdlib.Options, log *slog.Logger) (*telemetry.Tracing, error) {
	t, err := telemetry.Setup(ctx, telemetry.Options{Version: buildVersionText(), Getenv: environ, Log: log})
	if err != nil {
		return nil, err
	}
	t.Instrument(opts)
	return t, nil
}
