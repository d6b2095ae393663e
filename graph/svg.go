package graph

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/aguic/aguic/vm"
)

// The colours of the SVG drawing.
const (
	inkColor      = "#1f2933" // text and borders
	edgeColor     = "#52606d"
	errorColor    = "#b44d12"
	groupFill     = "#f3f6fb"
	groupStroke   = "#9aa5b8"
	decisionFill  = "#fff6db"
	suspendFill   = "#e6f0ff"
	circleFill    = "#e4e7eb"
	missingStroke = "#c53030"
	titleSize     = 15                 // px, the workflow titles
	titleHeight   = titleSize + margin // the band above each workflow for its title
	textRise      = FontSize * 0.35    // from a line's middle to its baseline
)

// WriteSVG draws the workflows as one standalone SVG 1.1 document, one
// below the other, each under its title: nodes as boxes (decisions as
// hexagons with pointed ends, nodes that may suspend with a double border
// and a pause mark, start and end as circles, missing targets dashed),
// edges as polylines with arrowheads and labels, groups as labelled
// rounded boxes. It uses no external font, script or image.
func WriteSVG(w io.Writer, wfs ...*vm.Workflow) error {
	layouts := make([]*Layout, len(wfs))
	width, height := 2.0*margin, 0.0
	for i, wf := range wfs {
		layouts[i] = LayOut(wf)
		width = max(width, layouts[i].Width, textWidth(heading(wf))*titleSize/FontSize+2*margin)
		height += titleHeight + layouts[i].Height
	}
	height = max(height, 2*margin)
	b := bufio.NewWriter(w)
	s := &svg{b: b}
	fmt.Fprintf(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
	fmt.Fprintf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%s\" height=\"%s\" viewBox=\"0 0 %s %s\" font-family=\"monospace\" font-size=\"%d\">\n",
		num(width), num(height), num(width), num(height), FontSize)
	fmt.Fprintf(b, "<defs>\n")
	for _, c := range []string{edgeColor, errorColor} {
		fmt.Fprintf(b, "<marker id=\"arrow-%s\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" markerUnits=\"userSpaceOnUse\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"%s\"/></marker>\n", c[1:], c)
	}
	fmt.Fprintf(b, "</defs>\n")
	fmt.Fprintf(b, "<rect width=\"%s\" height=\"%s\" fill=\"#ffffff\"/>\n", num(width), num(height))
	top := 0.0
	for i, l := range layouts {
		fmt.Fprintf(b, "<g id=\"workflow-%d\" transform=\"translate(0,%s)\">\n", i, num(top))
		fmt.Fprintf(b, "<text x=\"%d\" y=\"%s\" font-size=\"%d\" font-weight=\"bold\" fill=\"%s\">%s</text>\n",
			margin, num(titleHeight-textRise), titleSize, inkColor, esc(heading(wfs[i])))
		fmt.Fprintf(b, "<g transform=\"translate(0,%d)\">\n", titleHeight)
		s.layout(l)
		fmt.Fprintf(b, "</g>\n</g>\n")
		top += titleHeight + l.Height
	}
	fmt.Fprintf(b, "</svg>\n")
	return b.Flush()
}

// heading is what a drawing shows above a workflow: its title and id.
func heading(w *vm.Workflow) string {
	if w.Title == "" || w.Title == w.ID {
		return w.ID
	}
	return w.Title + " (" + w.ID + ")"
}

// svg writes the elements of one layout.
type svg struct{ b *bufio.Writer }

func (s *svg) layout(l *Layout) {
	for _, g := range l.Groups {
		fmt.Fprintf(s.b, "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" rx=\"8\" fill=\"%s\" fill-opacity=\"0.6\" stroke=\"%s\"/>\n",
			num(g.X), num(g.Y), num(g.Width), num(g.Height), groupFill, groupStroke)
		fmt.Fprintf(s.b, "<text x=\"%s\" y=\"%s\" fill=\"%s\" font-style=\"italic\">%s</text>\n",
			num(g.X+groupPad), num(g.Y+groupLabel/2+groupPad/2+textRise), groupStroke, esc(g.Label))
	}
	for _, e := range l.Edges {
		color, dash := edgeColor, ""
		if e.Style == StyleDashed {
			color, dash = errorColor, ` stroke-dasharray="5,4"`
		}
		pts := make([]string, len(e.Points))
		for i, p := range e.Points {
			pts[i] = num(p[0]) + "," + num(p[1])
		}
		fmt.Fprintf(s.b, "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.4\"%s marker-end=\"url(#arrow-%s)\"/>\n",
			strings.Join(pts, " "), color, dash, color[1:])
	}
	for _, e := range l.Edges {
		if e.Label == vm.EdgeNext {
			continue
		}
		w := textWidth(e.Label) + 2*labelPad
		fmt.Fprintf(s.b, "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%d\" rx=\"3\" fill=\"#ffffff\" fill-opacity=\"0.9\"/>\n",
			num(e.LabelX-w/2), num(e.LabelY-labelHeight/2), num(w), labelHeight)
		fmt.Fprintf(s.b, "<text x=\"%s\" y=\"%s\" text-anchor=\"middle\" fill=\"%s\">%s</text>\n",
			num(e.LabelX), num(e.LabelY+textRise), edgeColor, esc(e.Label))
	}
	for _, n := range l.Nodes {
		s.node(n)
	}
}

// node draws a vertex: its shape, then its text, with the whole text as a
// tooltip.
func (s *svg) node(n Vertex) {
	b := s.b
	cx, cy := n.X+n.Width/2, n.Y+n.Height/2
	fmt.Fprintf(b, "<g><title>%s</title>\n", esc(strings.TrimSpace(n.ID+"\n"+n.Text)))
	switch {
	case n.Shape == ShapeCircle:
		fmt.Fprintf(b, "<circle cx=\"%s\" cy=\"%s\" r=\"%s\" fill=\"%s\" stroke=\"%s\"/>\n", num(cx), num(cy), num(n.Width/2), circleFill, inkColor)
		fmt.Fprintf(b, "<text x=\"%s\" y=\"%s\" text-anchor=\"middle\" fill=\"%s\">%s</text>\n</g>\n", num(cx), num(cy+textRise), inkColor, esc(n.Text))
		return
	case n.Shape == ShapeDecision:
		x0, x1, y0, y1 := n.X, n.X+n.Width, n.Y, n.Y+n.Height
		fmt.Fprintf(b, "<polygon points=\"%s,%s %s,%s %s,%s %s,%s %s,%s %s,%s\" fill=\"%s\" stroke=\"%s\"/>\n",
			num(x0), num(cy), num(x0+DecisionInset), num(y0), num(x1-DecisionInset), num(y0),
			num(x1), num(cy), num(x1-DecisionInset), num(y1), num(x0+DecisionInset), num(y1), decisionFill, inkColor)
	case n.Shape == ShapeSuspend:
		fmt.Fprintf(b, "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" rx=\"4\" fill=\"%s\" stroke=\"%s\"/>\n", num(n.X), num(n.Y), num(n.Width), num(n.Height), suspendFill, inkColor)
		fmt.Fprintf(b, "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" rx=\"2\" fill=\"none\" stroke=\"%s\"/>\n", num(n.X+3), num(n.Y+3), num(n.Width-6), num(n.Height-6), inkColor)
		for _, dx := range []float64{-10, -6} {
			fmt.Fprintf(b, "<rect x=\"%s\" y=\"%s\" width=\"2\" height=\"8\" fill=\"%s\"/>\n", num(n.X+n.Width+dx), num(n.Y+6), inkColor)
		}
	case n.Role == RoleMissing:
		fmt.Fprintf(b, "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"#ffffff\" stroke=\"%s\" stroke-dasharray=\"4,3\"/>\n", num(n.X), num(n.Y), num(n.Width), num(n.Height), missingStroke)
	default:
		fmt.Fprintf(b, "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" rx=\"4\" fill=\"#ffffff\" stroke=\"%s\"/>\n", num(n.X), num(n.Y), num(n.Width), num(n.Height), inkColor)
	}
	fmt.Fprintf(b, "<text x=\"%s\" y=\"%s\" text-anchor=\"middle\" font-weight=\"bold\" fill=\"%s\">%s</text>\n",
		num(cx), num(n.Y+padY+LineHeight/2+textRise), inkColor, esc(n.ID))
	fmt.Fprintf(b, "<text x=\"%s\" y=\"%s\" text-anchor=\"middle\" fill=\"%s\">%s</text>\n</g>\n",
		num(cx), num(n.Y+padY+LineHeight*3/2+textRise), inkColor, esc(n.Text))
}

// num prints a coordinate as short as it goes.
func num(v float64) string { return strconv.FormatFloat(round(v), 'f', -1, 64) }

// esc escapes s for XML text and attribute values.
func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
