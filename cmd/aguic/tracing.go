package main

import (
	"context"
	"net/http"
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
// http nodes of opts traced by it. The caller shuts it down, which
// flushes the spans left.
func setupTracing(ctx context.Context, opts *stdlib.Options) (*telemetry.Tracing, error) {
	t, err := telemetry.Setup(ctx, telemetry.Options{Version: buildVersionText(), Getenv: environ})
	if err != nil || t == nil {
		return nil, err
	}
	opts.Models = t.Models(opts.Models)
	opts.TraceTool = t.Tool
	base := opts.HTTPClient
	if base == nil {
		base = &http.Client{}
		if dt, ok := http.DefaultTransport.(*http.Transport); ok {
			base.Transport = dt.Clone()
		}
	}
	c := *base
	c.Transport = t.Transport(base.Transport)
	opts.HTTPClient = &c
	return t, nil
}
