package main

import (
	"flag"
	"io"
	"strings"

	"github.com/aguic/aguic/vm"
)

func graphCommand() *command {
	c := &command{
		name:    "graph",
		args:    "[--format mermaid|dot] [--workflow id] [paths…]",
		summary: "draw the graph of workflows as Mermaid or DOT",
		doc: `
Graph compiles the .wf files named by paths (files or directories, as for
check; the default is the current directory) and draws the graph each
workflow is lowered to: one vertex per node with its id, kind and a short
detail, a start vertex at the entry, an end vertex where the flow ends, and
every edge with its label. With --workflow it draws that workflow only;
otherwise every workflow, sorted by id, a blank line between them.

On errors in the sources the diagnostics go to standard error.`,
		examples: `
# Draw every workflow under workflows/ as Mermaid flowcharts.
aguic graph workflows
# Draw one workflow as an SVG with Graphviz.
aguic graph --format dot --workflow chat workflows | dot -Tsvg > chat.svg`,
		exit: "0 on success, 1 when the sources have errors, 2 on a usage or I/O error (an unknown --workflow id among them).",
		vars: map[string]string{"format": ""},
	}
	c.flags = func(fs *flag.FlagSet) func(*env, []string) int {
		format := fs.String("format", "mermaid", "output `format`: mermaid or dot")
		workflow := fs.String("workflow", "", "draw only the workflow with this `id`")
		return func(e *env, args []string) int {
			var draw func(*vm.Workflow, io.Writer) error
			switch *format {
			case "mermaid":
				draw = (*vm.Workflow).WriteMermaid
			case "dot":
				draw = (*vm.Workflow).WriteDOT
			default:
				return usageError(e, c, "unknown format %q (want mermaid or dot)", *format)
			}
			prog, status := compile(e, args)
			if prog == nil {
				return status
			}
			wfs := prog.Workflows
			if *workflow != "" {
				w := prog.Workflow(*workflow)
				if w == nil {
					ids := make([]string, len(prog.Workflows))
					for i, w := range prog.Workflows {
						ids[i] = w.ID
					}
					e.errorf("unknown workflow %q (the workflows are: %s)", *workflow, strings.Join(ids, ", "))
					return exitUsage
				}
				wfs = []*vm.Workflow{w}
			}
			for i, w := range wfs {
				if i > 0 {
					io.WriteString(e.stdout, "\n")
				}
				if err := draw(w, e.stdout); err != nil {
					e.errorf("%v", err)
					return exitUsage
				}
			}
			return exitOK
		}
	}
	return c
}
