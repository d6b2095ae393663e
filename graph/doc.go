// Package graph draws workflows: it turns the graph a *vm.Workflow is
// compiled to into a Mermaid flowchart, a Graphviz digraph, an SVG
// picture, or a Layout that a browser draws from.
//
// Every drawing shows the same graph. Its vertices are a start vertex
// "(start)" pointing at the entry, one vertex per node (in the order of
// Workflow.Nodes, showing the node's id and then its kind and a short
// detail, vm.Node.Text), a dashed vertex for each edge target that is no
// node, and an end vertex "(end)" when some edge ends the flow. Its edges
// are the nodes' edges with their names: "next" drawn without a label,
// "error" dashed, "true", "false", "case N", "default", "body", "branch
// NAME" and handler names ("result", "other", …) labelled. Its groups box
// the blocks the node ids and spans carry: a step (the step node, its
// body and its step_end node), a for or while loop (the loop node and its
// body), a try statement (the try node, its body, and a catch group with
// the catch node and its block), a parallel (the parallel node, its join,
// and a branch group per branch) and each `on name` handler's block. The
// blocks of if and switch are not boxed: their edges say enough.
//
// WriteMermaid, WriteDOT and WriteSVG each write one valid document
// whatever the number of workflows: several workflows become subgraphs,
// clusters, or pictures stacked under their titles, with vertex names
// unique in the document.
//
// LayOut computes where everything goes, once, for the SVG writer and for
// any other client (the server sends it as the layout of a workflow's
// description). It is a layered (Sugiyama) layout: back edges are found by
// a depth-first walk from the start vertex and drawn going back up on the
// right side; layers are longest paths from the start vertex, and an edge
// that leaves a group goes to a layer below the whole group; the vertices
// of each layer are ordered by barycentre sweeps that keep every group's
// vertices side by side; x coordinates keep group boxes apart in every
// layer and pull each vertex towards the vertices it is joined to; long
// edges run through lanes, one point pair per layer they cross. The same
// workflow always gives the same layout.
//
// # The layout
//
// A Layout is JSON with these fields; lengths are px, x grows to the
// right and y downwards from the top-left corner, and every box and point
// lies within width × height:
//
//	workflow, title      the workflow's id and title
//	width, height        the size of the drawing
//	nodes[]              the vertices, in the order above:
//	  id                 the node id, or "(start)", "(end)"
//	  kind, label, text  the node's kind, its source label, and the second line of its box
//	  role               node | start | end | missing
//	  shape              box | decision | suspend | circle
//	  suspends           whether the run may suspend at the node
//	  group              the innermost group holding it
//	  span               {file, start: {line, col}, end: {line, col}}: where its statement is
//	  keys               its key = value entries as written, and assigns, cond, max, var,
//	                     iter, arg (the positional argument) and out (the -> path) when it has them
//	  x, y, width, height the box: x, y its top-left corner
//	edges[]              the start edge, then each node's edges in order:
//	  from, to           vertex ids
//	  label              the edge's name ("next" included, though it is drawn without it)
//	  style              solid | dashed
//	  back               whether it goes back up: it leaves and enters on the right side
//	  points             [[x, y], …]: from the border of from's box to the border of to's,
//	                     where the arrowhead goes
//	  labelX, labelY     the centre of the drawn label; 0 for a next edge
//	groups[]             outer groups before inner ones:
//	  id, kind, label    e.g. "parallel 3/branch pros", branch, "branch pros"
//	  parent             the id of the group holding it
//	  x, y, width, height its box; its label goes in the band at its top
//
// Text is sized with one metric, shared by the SVG and the studio: a 13px
// monospace font (FontSize), CharWidth (7.8px) per rune, LineHeight
// (16px) per line. A box is 44px high: 6px of padding, the id on the
// first line, the text on the second, 6px of padding; it is as wide as
// its longer line plus 10px on each side, 60px at the least, and a
// decision's pointed ends reach DecisionInset (14px) further on each side.
// A start or end circle is 44px across. Edge labels are drawn in the same
// font on a background 3px wider than the text on each side and 22px
// high; group labels sit 10px in from the group's left side, in the 20px
// band below its top border.
package graph
