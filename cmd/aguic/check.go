package main

import (
	"flag"
	"io"
	"path/filepath"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/lang"
	"github.com/aguic/aguic/lang/diag"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/vm"
)

func checkCommand() *command {
	c := &command{
		name:    "check",
		args:    "[--format text|json|github] [--stdin-filename name] [paths…] [-]",
		summary: "report the errors and warnings of .wf files",
		doc: `
Check compiles every .wf file named by paths together, as one program: a
workflow id must be unique across all of them and a call may name a
workflow of any of them. A directory stands for every *.wf file below it,
hidden directories and node_modules left out; the default is the current
directory. The mcp.lock.json of each directory that holds one of the files
is read with them: it says which tools the MCP servers they declare have,
and what arguments the tools take (aguic mcp lock writes it).

A path - reads a file from standard input, as an editor checks a buffer
it has not saved: --stdin-filename gives its name (diagnostics name it so,
and the lock of its directory is read). When that name is also one of the
files the other paths name, the text of standard input stands for it: the
buffer is checked with the rest of the project, as it will be once saved.

Diagnostics go to standard output, sorted by file and position. The text
format prints each as file:line:col: severity[code]: message with the source
line and a caret, then a summary, and nothing at all for a clean program; a
diagnostic that involves another place, such as the first of two
declarations of one name, is followed by a file:line:col: note: line for
it. json prints one array of objects (an empty one when clean), with the
notes in "related"; github prints GitHub Actions workflow commands, and a
notice at the place of each note.`,
		examples: `
# Check every .wf file under the current directory.
aguic check
# Check the files of a CI job, as annotations on the pull request.
aguic check --format github workflows
# The diagnostics as JSON, for an editor or a script.
aguic check --format json workflows/chat.wf
# An editor's unsaved buffer of workflows/chat.wf, with the other workflows.
aguic check --format json --stdin-filename workflows/chat.wf - workflows < buffer`,
		exit: "0 when there are no errors (warnings allowed), 1 when there are, 2 on a usage or I/O error.",
		vars: map[string]string{"format": "", "stdin-filename": ""},
	}
	c.flags = func(fs *flag.FlagSet) func(*env, []string) int {
		format := fs.String("format", "text", "output `format`: text, json or github")
		stdinName := fs.String("stdin-filename", "", "the `name` of the file the path - reads from standard input")
		return func(e *env, args []string) int {
			switch *format {
			case "text", "json", "github":
			default:
				return usageError(e, c, "unknown format %q (want text, json or github)", *format)
			}
			var stdin *compiler.Source
			paths := make([]string, 0, len(args))
			for _, a := range args {
				if a != "-" {
					paths = append(paths, a)
					continue
				}
				if stdin != nil {
					return usageError(e, c, "- is given twice: standard input holds one file")
				}
				text, err := io.ReadAll(e.stdin)
				if err != nil {
					e.errorf("reading standard input: %v", err)
					return exitUsage
				}
				name := "<standard input>"
				if *stdinName != "" {
					name = filepath.Clean(*stdinName)
				}
				stdin = &compiler.Source{Name: name, Text: lang.Clean(text)}
			}
			if *stdinName != "" && stdin == nil {
				return usageError(e, c, "--stdin-filename names the file of the path -, and no path is -")
			}
			return check(e, *format, paths, stdin)
		}
	}
	return c
}

// check checks the files paths name and stdin, the file standard input
// held (nil when no path was -), which stands for the file of its name.
func check(e *env, format string, paths []string, stdin *compiler.Source) int {
	var files []string
	if len(paths) == 0 && stdin == nil {
		paths = []string{"."}
	}
	if len(paths) > 0 {
		var ok bool
		if files, ok = wfFiles(e, paths); !ok {
			return exitUsage
		}
	}
	srcs, ok := readSourcesWith(e, files, stdin)
	if !ok {
		return exitUsage
	}
	diags := compiler.Check(stdlib.Registry(), srcs...)
	var err error
	switch format {
	case "json":
		err = diags.WriteJSON(e.stdout)
	case "github":
		err = diags.WriteGitHub(e.stdout)
	default:
		err = diags.WriteText(e.stdout, fileSet(srcs))
	}
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	if diags.HasErrors() {
		return exitFound
	}
	return exitOK
}

// compile reads and compiles the .wf files named by paths. On an I/O error
// it returns status 2 after reporting it; on errors in the sources it
// writes the diagnostics to stderr and returns status 1. Warnings of a
// program that compiles go to stderr too.
func compile(e *env, paths []string) (*vm.Program, int) {
	prog, _, status := compileSources(e, paths)
	return prog, status
}

func fileSet(srcs []compiler.Source) diag.FileSet {
	fs := diag.FileSet{}
	for _, s := range srcs {
		fs.Add(s.Name, s.Text)
	}
	return fs
}
