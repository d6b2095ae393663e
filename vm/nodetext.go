package vm

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// detailRunes is how many runes of a node's detail Node.Text shows.
const detailRunes = 40

// nodeText is a node's kind and a short detail: "say \"Hello\"",
// "http GET \"https://…\"", "if $x > 1".
func nodeText(n *Node) string {
	d := truncate(nodeDetail(n))
	if d == "" {
		return n.Kind
	}
	return n.Kind + " " + d
}

// nodeDetail is the part of a node worth showing beside its kind.
func nodeDetail(n *Node) string {
	src := func(v *Value) string {
		if v == nil {
			return ""
		}
		return v.Source
	}
	switch n.Kind {
	case KindSet:
		parts := make([]string, len(n.Assigns))
		for i, a := range n.Assigns {
			parts[i] = a.Path.String() + " = " + src(a.Value)
		}
		return strings.Join(parts, "; ")
	case KindIf:
		return src(n.Cond)
	case KindWhile:
		return src(n.Cond) + " max " + strconv.Itoa(n.Max)
	case KindFor:
		return n.Var + " in " + src(n.Iter)
	case KindStep, KindStepEnd:
		return strconv.Quote(n.Name)
	case KindParallel:
		return n.Name
	case KindCatch:
		return n.Var
	case KindSwitch, KindTry, KindJoin, KindEnd:
		return ""
	}
	// Registered kinds: the word and the positional argument, or else what
	// the kind's Detail shows (the model a model node calls).
	parts := make([]string, 0, 2)
	if n.Word != "" {
		parts = append(parts, n.Word)
	}
	if s := src(n.Arg); s != "" {
		parts = append(parts, s)
	} else if n.Word == "" && n.Spec != nil && n.Spec.Detail != nil {
		if d := n.Spec.Detail(n); d != "" {
			parts = append(parts, d)
		}
	}
	return strings.Join(parts, " ")
}

// truncate puts s on one line, whitespace runs collapsed, and cuts it to
// detailRunes runes with an ellipsis.
func truncate(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= detailRunes {
		return s
	}
	r := []rune(s)
	return string(r[:detailRunes-1]) + "…"
}
