package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/aguic/aguic/lsp"
	"github.com/aguic/aguic/stdlib"
)

func lspCommand() *command {
	c := &command{
		name:    "lsp",
		args:    "[--stdio]",
		summary: "run the language server of .wf files for an editor",
		doc: `
Lsp is the language server of the .wf language: an editor starts it and
speaks the Language Server Protocol to it on standard input and output.
It logs to standard error.

An open document is checked as you type, with the other .wf files of its
directory and of the directories below, as aguic check checks that
directory: the same diagnostics, the text of open documents standing for
their files on disk. It also answers hover (node kinds, keys, handlers,
keywords, $agent paths, labels, workflows, tools), go to definition and
find references (labels, workflows, tools, MCP servers, context roots),
completion, document symbols, formatting (as aguic fmt) and the rename of
labels and workflows.

--stdio, which editors pass, is the only transport and may be left out.`,
		examples: `
# What an editor runs; docs/editors.md says how to set one up.
aguic lsp --stdio`,
		exit: "0 after the client's shutdown request and exit, 1 when it exits (or the input ends) without a shutdown, 2 on a usage error.",
		vars: map[string]string{"stdio": ""},
	}
	c.flags = func(fs *flag.FlagSet) func(*env, []string) int {
		fs.Bool("stdio", true, "speak on standard input and output (the default, and the only transport)")
		return func(e *env, args []string) int {
			if len(args) > 0 {
				return usageError(e, c, "lsp takes no arguments")
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			version := "devel"
			if bi, ok := debug.ReadBuildInfo(); ok {
				version = buildVersion(bi).Version
			}
			s := lsp.New(stdlib.Registry(), lsp.Options{Log: e.stderr, Version: version})
			err := s.Serve(ctx, stdio{e.stdin, e.stdout})
			if errors.Is(err, lsp.ErrNoShutdown) {
				return exitFound
			}
			if err != nil {
				e.errorf("%v", err)
				return exitFound
			}
			return exitOK
		}
	}
	return c
}

// stdio is standard input and output as one stream.
type stdio struct {
	io.Reader
	io.Writer
}

// Close closes standard input when it can be closed, which ends the read
// that waits on it.
func (s stdio) Close() error {
	if c, ok := s.Reader.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
