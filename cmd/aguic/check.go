package main

import (
	"flag"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/lang/diag"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/vm"
)

func checkCommand() *command {
	c := &command{
		name:    "check",
		args:    "[--format text|json|github] [paths…]",
		summary: "report the errors and warnings of .wf files",
		doc: `
Check compiles every .wf file named by paths together, as one program: a
workflow id must be unique across all of them and a call may name a
workflow of any of them. A directory stands for every *.wf file below it,
hidden directories and node_modules left out; the default is the current
directory. The mcp.lock.json of each directory that holds one of the files
is read with them: it says which tools the MCP servers they declare have,
and what arguments the tools take (aguic mcp lock writes it).

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
aguic check --format json workflows/chat.wf`,
		exit: "0 when there are no errors (warnings allowed), 1 when there are, 2 on a usage or I/O error.",
		vars: map[string]string{"format": ""},
	}
	c.flags = func(fs *flag.FlagSet) func(*env, []string) int {
		format := fs.String("format", "text", "output `format`: text, json or github")
		return func(e *env, args []string) int {
			switch *format {
			case "text", "json", "github":
			default:
				return usageError(e, c, "unknown format %q (want text, json or github)", *format)
			}
			return check(e, *format, args)
		}
	}
	return c
}

func check(e *env, format string, paths []string) int {
	if len(paths) == 0 {
		paths = []string{"."}
	}
	files, ok := wfFiles(e, paths)
	if !ok {
		return exitUsage
	}
	srcs, ok := readSources(e, files)
	if !ok {
		return exitUsage
	}
	_, diags := compiler.Compile(stdlib.Registry(), srcs...)
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
