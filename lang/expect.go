package lang

import (
	"slices"
	"strings"
)

// expectedWords turns participle's EBNF of what the parser expected next
// (`"in" Cond Block`, `Version (Workflow | <newline> | <semi>)*`) into the
// words of a message: what may come first (`"in"`, `"wf 1"`). ok is false
// when the text is not EBNF it understands.
func expectedWords(ebnf string) (words string, ok bool) {
	toks, ok := scanEBNF(ebnf)
	if !ok || len(toks) == 0 {
		return "", false
	}
	if len(toks) > 1 && toks[1] == "=" {
		// A whole production, `Name = … .`: the name says it best.
		toks = toks[:1]
	}
	p := &ebnfParser{toks: toks}
	p.alts(true)
	if p.bad || p.i != len(p.toks) || len(p.words) == 0 {
		return "", false
	}
	list := p.words
	if len(list) > 1 {
		list = slices.DeleteFunc(list, func(w string) bool { return w == "newline" || w == `";"` })
	}
	if len(list) > 4 && slices.Contains(list, "a statement") {
		return "a statement", true
	}
	if len(list) == 1 {
		return list[0], true
	}
	return strings.Join(list[:len(list)-1], ", ") + " or " + list[len(list)-1], true
}

// scanEBNF splits participle's EBNF into tokens: quoted literals, <token>
// references, names and punctuation.
func scanEBNF(s string) ([]string, bool) {
	var toks []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\n' || c == '\t':
			i++
		case c == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) {
				return nil, false
			}
			toks = append(toks, s[i:j+1])
			i = j + 1
		case c == '<':
			j := strings.IndexByte(s[i:], '>')
			if j < 0 {
				return nil, false
			}
			toks = append(toks, s[i:i+j+1])
			i += j + 1
		case strings.HasPrefix(s[i:], "(?=") || strings.HasPrefix(s[i:], "(?!"):
			toks = append(toks, s[i:i+3])
			i += 3
		case strings.IndexByte("()|?*+!~.=", c) >= 0:
			toks = append(toks, s[i:i+1])
			i++
		case c == '_' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z':
			j := i + 1
			for j < len(s) && (s[j] == '_' || 'A' <= s[j] && s[j] <= 'Z' || 'a' <= s[j] && s[j] <= 'z' || '0' <= s[j] && s[j] <= '9') {
				j++
			}
			toks = append(toks, s[i:j])
			i = j
		default:
			return nil, false
		}
	}
	return toks, true
}

// ebnfParser collects the words for what may come first in an EBNF
// expression.
type ebnfParser struct {
	toks  []string
	i     int
	words []string
	bad   bool
}

func (p *ebnfParser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return ""
}

// alts parses `seq | seq …` and reports whether it can match nothing.
func (p *ebnfParser) alts(collect bool) bool {
	nullable := p.seq(collect)
	for p.peek() == "|" {
		p.i++
		nullable = p.seq(collect) || nullable
	}
	return nullable
}

// seq parses terms up to `|`, `)` or the end; only the terms that may come
// first add words.
func (p *ebnfParser) seq(collect bool) bool {
	nullable := true
	for p.i < len(p.toks) && !p.bad && p.peek() != "|" && p.peek() != ")" {
		nullable = p.term(collect && nullable) && nullable
	}
	return nullable
}

func (p *ebnfParser) term(collect bool) bool {
	t := p.peek()
	p.i++
	nullable := false
	switch {
	case t == "(":
		nullable = p.alts(collect)
		p.close()
	case t == "(?=" || t == "(?!":
		p.alts(false)
		p.close()
		nullable = true
	case t == "~":
		p.term(false)
		p.add(collect, "another token")
	case strings.HasPrefix(t, `"`):
		p.add(collect, t)
	case t == "<strclose>":
		p.add(collect, `closing "`)
	case t == "<heredocclose>":
		p.add(collect, `closing """`)
	case strings.HasPrefix(t, "<"):
		p.add(collect, expectedNames.Replace(t))
	case t != "" && strings.IndexByte("()|?*+!~.=", t[0]) < 0:
		p.add(collect, nodeWords(t))
	default:
		p.bad = true
		return false
	}
	switch p.peek() {
	case "?", "*":
		p.i++
		nullable = true
	case "+", "!":
		p.i++
	}
	return nullable
}

func (p *ebnfParser) close() {
	if p.peek() != ")" {
		p.bad = true
		return
	}
	p.i++
}

func (p *ebnfParser) add(collect bool, word string) {
	if collect && !slices.Contains(p.words, word) {
		p.words = append(p.words, word)
	}
}

// nodeWords names what an AST node starts with, for "expected …".
func nodeWords(name string) string {
	switch name {
	case "Version":
		return `"wf 1"`
	case "Ident", "Attr":
		return "name"
	case "Member":
		return "an attribute, tool or flow"
	case "ToolItem":
		return "an attribute or statement"
	case "Block", "NodeBody":
		return `"{"`
	case "Stmt", "Node":
		return "a statement"
	case "Entry":
		return "a key or handler"
	case "Case":
		return `"case" or "default"`
	case "Handler":
		return `"on"`
	case "Path", "Assign":
		return "$path"
	case "PathKey":
		return `"." or "["`
	case "Label":
		return "label"
	case "Expr", "Part", "InnerPart", "Cond", "CondPart", "Interp":
		return "an expression"
	case "Arg", "ArgPart":
		return "an argument"
	case "Group", "CondGroup", "ArgGroup":
		return `"("`
	case "String":
		return "string"
	case "StrPart":
		return "text"
	case "Server":
		return `"mcp"`
	case "Workflow", "Tool", "Set", "If", "Switch", "For", "While", "Goto", "Step",
		"Parallel", "Branch", "Try", "End", "Fail":
		return `"` + strings.ToLower(name) + `"`
	}
	return strings.ToLower(name)
}
