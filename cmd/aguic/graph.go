package main

import (
	"flag"
	"io"
	"strings"

	"github.com/aguic/aguic/graph"
	"github.com/aguic/aguic/vm"
)

func graphCommand() *command {
	c := &command{
		name:    "graph",
		args:    "[--format mermaid|dot|svg|json] [--workflow id] [paths…]",
		summary: "draw the graph of workflows as Mermaid, DOT, SVG or a JSON layout",
		doc: `
Graph compiles the .wf files named by paths (files or directories, as for
check; the default is the current directory) and draws the graph each
workflow is lowered to: one vertex per node with its id, kind and a short
detail, a start vertex at the entry, an end vertex where the flow ends,
every edge with its label, and a box around each step, loop, try, catch,
parallel branch and handler block. With --workflow it draws that workflow
only; otherwise every workflow, sorted by id, in one document: one
flowchart with a subgraph per workflow (mermaid), one digraph with a
cluster per workflow (dot), one standalone SVG picture with the workflows
one below the other (svg), or a JSON array of layouts, one per workflow,
as the server's description of a workflow gives its layout (json).

On errors in the sources the diagnostics go to standard error.`,
		examples: `
# Draw every workflow under workflows/ as one Mermaid flowchart.
aguic graph workflows
# Draw every workflow as an SVG picture, no other tool needed.
aguic graph --format svg workflows > graph.svg
# Draw one workflow with Graphviz.
aguic graph --format dot --workflow chat workflows | dot -Tsvg > chat.svg`,
		exit: "0 on success, 1 when the sources have errors, 2 on a usage or I/O error (an unknown --workflow id among them).",
		vars: map[string]string{"format": ""},
	}
	c.flags = func(fs *flag.FlagSet) func(*env, []string) int {
		format := fs.String("format", "mermaid", "output `format`: mermaid, dot, svg or json")
		workflow := fs.String("workflow", "", "draw only the workflow with this `id`")
		return func(e *env, args []string) int {
			var draw func(io.Writer, ...*vm.Workflow) error
			switch *format {
			case "mermaid":
				draw = graph.WriteMermaid
			case "dot":
				draw = graph.WriteDOT
			case "svg":
				draw = graph.WriteSVG
			case "json":
				draw = graph.WriteJSON
			default:
				return usageError(e, c, "unknown format %q (want mermaid, dot, svg or json)", *format)
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
			if err := draw(e.stdout, wfs...); err != nil {
				e.errorf("%v", err)
				return exitUsage
			}
			return exitOK
		}
	}
	return c
}
