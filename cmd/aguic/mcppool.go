package main

import (
	"log/slog"
	"runtime/debug"

	"github.com/aguic/aguic/mcpclient"
)

// mcpPool makes the connections of a command to the MCP servers its
// workflows declare, telling the servers this build's version; the
// command closes it when it ends, which stops the servers it started.
func mcpPool(log *slog.Logger) *mcpclient.Pool {
	version := "devel"
	if bi, ok := debug.ReadBuildInfo(); ok {
		version = buildVersion(bi).Version
	}
	return mcpclient.NewPool(mcpclient.Options{Logger: log, Version: version})
}
