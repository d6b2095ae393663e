package vm

import (
	"strings"

	"github.com/aguic/aguic/mcplock"
)

// Origin is what a lock records of the declaration as its From: the
// source text of its command, args and url, each line trimmed of the
// blanks around it, so that reformatting a declaration does not make its
// lock stale.
func (s *Server) Origin() mcplock.Origin {
	return mcplock.Origin{Command: sourceText(s.Command), Args: sourceText(s.Args), URL: sourceText(s.URL)}
}

// sourceText is a value's source with each line trimmed; "" for nil.
func sourceText(v *Value) string {
	if v == nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(v.Source), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return strings.Join(lines, "\n")
}
