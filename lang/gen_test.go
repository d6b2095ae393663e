package lang_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aguic/aguic/lang"
)

// TestFormatGenerated formats random programs written with random layout:
// blanks, tabs, semicolons, blank lines, comments of every kind between
// tokens, labels on lines of their own and multi-line values.
func TestFormatGenerated(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 30
	}
	failed := 0
	for i := range n {
		g := &generator{r: rand.New(rand.NewPCG(uint64(i), 7))}
		src := []byte(g.file())
		if _, diags := lang.Parse("gen.wf", src); diags.HasErrors() {
			failed++
			t.Logf("generated program %d does not parse: %v\n%s", i, diags.Err(), src)
			continue
		}
		checkFormat(t, "gen.wf", src)
		if t.Failed() {
			t.Fatalf("program %d:\n%s", i, src)
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d generated programs do not parse", failed, n)
	}
}

// generator writes random valid .wf source.
type generator struct {
	r     *rand.Rand
	b     strings.Builder
	depth int
}

func (g *generator) pick(options ...string) string { return options[g.r.IntN(len(options))] }

func (g *generator) w(s string) { g.b.WriteString(s) }

// gap writes what may separate two tokens of one line.
func (g *generator) gap() {
	g.w(g.pick(" ", " ", " ", "  ", "\t", " /* c */ ", "/*x*/", " /* m\n  l */ "))
}

// sep writes what may separate two items of a list.
func (g *generator) sep() {
	g.w(g.pick("\n", "\n", "\n", ";", "; ", "\n\n", "\n\n\n", " // c\n", "\n  // own\n", "\n/* b */\n", " /* t */\n", "\r\n", "\n   \t\n"))
}

func (g *generator) indent() { g.w(strings.Repeat(g.pick("  ", "    ", "\t", ""), g.depth)) }

func (g *generator) file() string {
	g.w(g.pick("", "// head\n", "/* head */\n\n", "\n"))
	g.w("wf")
	g.gap()
	g.w("1")
	for range 1 + g.r.IntN(3) {
		g.sep()
		if g.r.IntN(3) == 0 {
			g.server()
		} else {
			g.workflow()
		}
	}
	g.w(g.pick("\n", "", "\n// tail\n", "\n\n/* tail */", " // end"))
	return g.b.String()
}

func (g *generator) workflow() {
	g.w("workflow")
	g.gap()
	g.w(fmt.Sprintf("w%d", g.r.IntN(100)))
	g.gap()
	g.list(func() {
		switch g.r.IntN(4) {
		case 0:
			g.attr()
		case 1:
			g.w("tool")
			g.gap()
			g.w("t")
			g.gap()
			g.list(func() {
				if g.r.IntN(3) == 0 {
					g.node()
				} else {
					g.attr()
				}
			}, 3)
		default:
			g.w("flow")
			g.gap()
			g.block()
		}
	}, 4)
}

// server writes an MCP server declaration: attributes only.
func (g *generator) server() {
	g.w("mcp")
	g.gap()
	g.w(fmt.Sprintf("s%d", g.r.IntN(100)))
	g.gap()
	g.list(g.attr, 4)
}

// list writes `{ items }` with up to max items.
func (g *generator) list(item func(), max int) {
	g.w("{")
	g.depth++
	n := g.r.IntN(max + 1)
	for range n {
		g.sep()
		g.indent()
		item()
	}
	if n > 0 || g.r.IntN(2) == 0 {
		g.sep()
	}
	g.depth--
	g.indent()
	g.w("}")
}

func (g *generator) block() {
	if g.depth > 6 {
		g.w("{}")
		return
	}
	g.list(g.stmt, 4)
}

func (g *generator) attr() {
	g.w(g.pick("title", "description", "x", "longer_name", "k"))
	g.gap()
	g.w("=")
	g.gap()
	g.expr()
}

func (g *generator) expr() {
	g.w(g.pick(
		"1", "$a.b", `"str <<$x>>"`, "[1, 2]", "{a: 1}", "$x ?? []",
		"{a: 1,\n    b: [\n  2\n      ]}",
		"\"\"\"\n      heredoc <<$x>>\n   more  \n  \"\"\"",
		"'sq'", "`raw\n   string`", "len($x) + (1\n   )",
		"[ // in list\n  1\n]",
	))
}

func (g *generator) cond() {
	g.w(g.pick("$a == 1", "len([\n   1,\n 2]) > 0", `"x" != $y`, "$ok", "(\n$a ||\n  $b)"))
}

func (g *generator) path() {
	g.w(g.pick("$a", "$a.b", "$a . b", "$list[0].x", "$r[ 2 ]"))
}

func (g *generator) label() {
	if g.r.IntN(4) == 0 {
		g.w(fmt.Sprintf("l%d:", g.r.IntN(1000)))
		g.w(g.pick(" ", "\n", "\n\n", " // after label\n", " /* l */ ", "\n// own\n"))
		g.indent()
	}
}

func (g *generator) stmt() {
	g.label()
	switch g.r.IntN(14) {
	case 0:
		g.w("set")
		g.gap()
		g.path()
		g.gap()
		g.w("=")
		g.gap()
		g.expr()
	case 1:
		g.w("set")
		g.gap()
		g.list(func() {
			g.path()
			g.gap()
			g.w("=")
			g.gap()
			g.expr()
		}, 3)
	case 2:
		g.w("if")
		g.gap()
		g.cond()
		g.gap()
		g.block()
		for g.r.IntN(2) == 0 {
			g.gap()
			g.w("else")
			g.gap()
			if g.r.IntN(2) == 0 {
				g.block()
				break
			}
			g.w("if")
			g.gap()
			g.cond()
			g.gap()
			g.block()
		}
	case 3:
		g.w("switch")
		g.gap()
		g.list(func() {
			if g.r.IntN(3) == 0 {
				g.w("default")
			} else {
				g.w("case")
				g.gap()
				g.cond()
			}
			g.gap()
			g.block()
		}, 3)
	case 4:
		g.w("for")
		g.gap()
		g.w("x")
		g.gap()
		g.w("in")
		g.gap()
		g.cond()
		g.gap()
		g.block()
	case 5:
		g.w("while")
		g.gap()
		g.cond()
		g.gap()
		g.w("max")
		g.gap()
		g.w("3")
		g.gap()
		g.block()
	case 6:
		g.w("goto")
		g.gap()
		g.w("l1")
	case 7:
		g.w("step")
		g.gap()
		g.w(g.pick(`"s"`, "\"\"\"\n  s\n\"\"\""))
		g.gap()
		g.block()
	case 8:
		g.w("parallel")
		g.gap()
		g.list(func() {
			g.w("branch")
			g.gap()
			g.w("b")
			g.gap()
			g.block()
		}, 2)
	case 9:
		g.w("try")
		g.gap()
		g.block()
		g.gap()
		g.w("catch")
		if g.r.IntN(2) == 0 {
			g.gap()
			g.w("e")
		}
		g.gap()
		g.block()
	case 10:
		g.w("end")
	case 11:
		g.w("fail")
		g.gap()
		g.expr()
	default:
		g.node()
	}
}

func (g *generator) node() {
	g.w(g.pick("say", "model", "http", "state", "emit", "call", "suspend"))
	if g.r.IntN(2) == 0 {
		g.gap()
		g.w(g.pick(`"x"`, `GET "u <<$a>>"`, "sync", "other", "$v", "[\n  1,\n    2\n]", "{k: 1}", "{\n  k: 1\n}"))
	}
	if g.r.IntN(2) == 0 {
		g.gap()
		g.list(func() {
			if g.r.IntN(4) == 0 && g.depth < 6 {
				g.w("on")
				g.gap()
				g.w(g.pick("result", "other"))
				g.gap()
				g.block()
				return
			}
			g.attr()
		}, 4)
	}
	if g.r.IntN(3) == 0 {
		g.gap()
		g.w("->")
		g.gap()
		g.path()
	}
}
