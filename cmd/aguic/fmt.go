package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"

	"github.com/aguic/aguic/lang"
	"github.com/aguic/aguic/lang/diag"
	"github.com/aguic/aguic/mcplock"
	"github.com/rogpeppe/go-internal/diff"
)

func fmtCommand() *command {
	c := &command{
		name:    "fmt",
		args:    "[-l] [-w] [-d] [paths…]",
		summary: "format .wf files in the canonical layout",
		doc: `
Fmt prints .wf files in the one canonical layout. Paths are files or
directories (every *.wf file below, as for check); without paths it formats
standard input to standard output. Without flags it prints the formatted
sources to standard output.

A file with a syntax error is left alone: its diagnostics go to standard
error, but the other files are still processed.`,
		examples: `
# Rewrite every .wf file under workflows/ in the canonical layout.
aguic fmt -w workflows
# List the files that are not formatted (in CI: fail when the list is not empty).
aguic fmt -l .
# Format standard input, as an editor does.
aguic fmt < chat.wf`,
		exit: "0 on success, 1 when a file has syntax errors, 2 on a usage or I/O error.",
		vars: map[string]string{"l": "", "w": "", "d": ""},
	}
	c.flags = func(fs *flag.FlagSet) func(*env, []string) int {
		var o fmtOptions
		fs.BoolVar(&o.list, "l", false, "list the files whose formatting differs")
		fs.BoolVar(&o.write, "w", false, "write the result back to the file instead of printing it")
		fs.BoolVar(&o.diff, "d", false, "print a unified diff of the changes formatting makes")
		return func(e *env, args []string) int {
			if len(args) == 0 {
				if o.write {
					return usageError(e, c, "cannot use -w with standard input")
				}
				src, err := io.ReadAll(e.stdin)
				if err != nil {
					e.errorf("reading standard input: %v", err)
					return exitUsage
				}
				return o.format(e, "<standard input>", src, nil)
			}
			files, ok := wfFiles(e, args)
			status := exitOK
			if !ok {
				status = exitUsage
			}
			for _, name := range files {
				if filepath.Base(name) == mcplock.FileName {
					continue // a lock of MCP servers is JSON, written by aguic mcp lock
				}
				status = max(status, o.file(e, name))
			}
			return status
		}
	}
	return c
}

type fmtOptions struct {
	list, write, diff bool
}

// file formats one file and returns the exit status it deserves.
func (o *fmtOptions) file(e *env, name string) int {
	info, err := os.Stat(name)
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	src, err := os.ReadFile(name)
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	return o.format(e, name, src, func(res []byte) error {
		return os.WriteFile(name, res, info.Mode().Perm())
	})
}

// format formats src and acts on the result as the flags say; write, nil
// for standard input, replaces the source.
func (o *fmtOptions) format(e *env, name string, src []byte, write func([]byte) error) int {
	res, diags := lang.FormatSource(name, src)
	if res == nil {
		fs := diag.FileSet{}
		fs.Add(name, src)
		diags.WriteText(e.stderr, fs)
		return exitFound
	}
	changed := !bytes.Equal(src, res)
	if o.list && changed {
		io.WriteString(e.stdout, name+"\n")
	}
	if o.write && changed && write != nil {
		if err := write(res); err != nil {
			e.errorf("%v", err)
			return exitUsage
		}
	}
	if o.diff && changed {
		e.stdout.Write(diff.Diff(name+".orig", src, name, res))
	}
	if !o.list && !o.write && !o.diff {
		e.stdout.Write(res)
	}
	return exitOK
}
